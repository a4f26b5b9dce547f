package rmqtwin.example.spring;

import java.util.Map;
import org.apache.rocketmq.common.message.MessageExt;
import org.apache.rocketmq.spring.annotation.ConsumeMode;
import org.apache.rocketmq.spring.annotation.RocketMQMessageListener;
import org.apache.rocketmq.spring.core.RocketMQListener;
import org.springframework.stereotype.Component;

/** The application's consumers: one concurrent, one orderly, one on the transactional topic. */
final class Listeners {
    private Listeners() {
    }

    static void received(String listener, MessageExt message) {
        String body = SpringExample.text(message.getBody());
        Map<String, Object> e = Events.event("received");
        e.put("listener", listener);
        e.put("body", body);
        e.put("topic", message.getTopic());
        e.put("tags", message.getTags());
        e.put("queueId", message.getQueueId());
        e.put("reconsumeTimes", message.getReconsumeTimes());
        e.put("sinceBornMs", System.currentTimeMillis() - message.getBornTimestamp());
        Events.emit(e);
        Events.received(body);
    }

    @Component
    @RocketMQMessageListener(topic = "${example.topic}", consumerGroup = "${example.group}")
    static class Plain implements RocketMQListener<MessageExt> {
        @Override
        public void onMessage(MessageExt message) {
            received("plain", message);
        }
    }

    @Component
    @RocketMQMessageListener(
        topic = "${example.order-topic}", consumerGroup = "${example.order-group}",
        consumeMode = ConsumeMode.ORDERLY)
    static class Orderly implements RocketMQListener<MessageExt> {
        @Override
        public void onMessage(MessageExt message) {
            received("orderly", message);
        }
    }

    @Component
    @RocketMQMessageListener(topic = "${example.tx-topic}", consumerGroup = "${example.tx-group}")
    static class Transactional implements RocketMQListener<MessageExt> {
        @Override
        public void onMessage(MessageExt message) {
            received("transactional", message);
        }
    }
}
