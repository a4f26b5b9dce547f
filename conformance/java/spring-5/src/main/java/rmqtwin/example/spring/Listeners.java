package rmqtwin.example.spring;

import java.util.Map;
import org.apache.rocketmq.client.consumer.DefaultMQPushConsumer;
import org.apache.rocketmq.common.consumer.ConsumeFromWhere;
import org.apache.rocketmq.common.message.MessageExt;
import org.apache.rocketmq.spring.annotation.ConsumeMode;
import org.apache.rocketmq.spring.annotation.RocketMQMessageListener;
import org.apache.rocketmq.spring.core.RocketMQListener;
import org.apache.rocketmq.spring.core.RocketMQPushConsumerLifecycleListener;
import org.springframework.stereotype.Component;

/**
 * The application's consumers: one concurrent, one orderly, one on the transactional topic.
 *
 * <p>Each consumes its new group from the first offset. The application sends as soon as it has
 * started, while its consumers may still be placing themselves on their queues, and a new group that
 * consumes from the last offset (the default) asks the broker for its offset, is told there is none,
 * then asks for the queue's max offset: a message stored between the two answers is skipped for good
 * (RebalancePushImpl.computePullFromWhereWithException, on the twin as on real 5.5.0).
 */
final class Listeners {
    private Listeners() {
    }

    /** Consumes a group that has no offset yet from the queue's first message. */
    abstract static class FromFirstOffset implements RocketMQPushConsumerLifecycleListener {
        @Override
        public void prepareStart(DefaultMQPushConsumer consumer) {
            consumer.setConsumeFromWhere(ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET);
        }
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
    static class Plain extends FromFirstOffset implements RocketMQListener<MessageExt> {
        @Override
        public void onMessage(MessageExt message) {
            received("plain", message);
        }
    }

    @Component
    @RocketMQMessageListener(
        topic = "${example.order-topic}", consumerGroup = "${example.order-group}",
        consumeMode = ConsumeMode.ORDERLY)
    static class Orderly extends FromFirstOffset implements RocketMQListener<MessageExt> {
        @Override
        public void onMessage(MessageExt message) {
            received("orderly", message);
        }
    }

    @Component
    @RocketMQMessageListener(topic = "${example.tx-topic}", consumerGroup = "${example.tx-group}")
    static class Transactional extends FromFirstOffset implements RocketMQListener<MessageExt> {
        @Override
        public void onMessage(MessageExt message) {
            received("transactional", message);
        }
    }
}
