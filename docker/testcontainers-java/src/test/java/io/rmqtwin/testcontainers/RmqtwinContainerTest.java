package io.rmqtwin.testcontainers;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.charset.StandardCharsets;
import java.util.HashSet;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.apache.rocketmq.client.consumer.DefaultMQPushConsumer;
import org.apache.rocketmq.client.consumer.listener.ConsumeConcurrentlyStatus;
import org.apache.rocketmq.client.consumer.listener.MessageListenerConcurrently;
import org.apache.rocketmq.client.producer.DefaultMQProducer;
import org.apache.rocketmq.client.producer.SendResult;
import org.apache.rocketmq.client.producer.SendStatus;
import org.apache.rocketmq.common.consumer.ConsumeFromWhere;
import org.apache.rocketmq.common.message.Message;
import org.apache.rocketmq.common.message.MessageExt;
import org.junit.jupiter.api.Test;
import org.testcontainers.junit.jupiter.Container;
import org.testcontainers.junit.jupiter.Testcontainers;

/** The real RocketMQ 5.5.0 producer and push consumer against the twin in a container. */
@Testcontainers
class RmqtwinContainerTest {
    @Container
    static final RmqtwinContainer TWIN = new RmqtwinContainer();

    @Test
    void producerAndPushConsumerRoundTrip() throws Exception {
        String topic = "Orders";
        DefaultMQProducer producer = new DefaultMQProducer("orders-producer");
        producer.setNamesrvAddr(TWIN.getNamesrvAddress());
        // The first send also looks the route up with a cold client: on a loaded test machine that
        // alone can pass the default 3 s send timeout.
        producer.setSendMsgTimeout(15_000);
        // Its route look-up has a timeout of its own (mqClientApiTimeout, 3 s): a CI run saw it pass.
        producer.setMqClientApiTimeout(15_000);
        producer.start();
        Set<String> sent = new HashSet<>();
        try {
            for (int i = 0; i < 5; i++) {
                Message msg = new Message(topic, "TagA", ("order " + i).getBytes(StandardCharsets.UTF_8));
                SendResult result = producer.send(msg);
                assertEquals(SendStatus.SEND_OK, result.getSendStatus());
                sent.add(result.getMsgId());
            }
        } finally {
            producer.shutdown();
        }

        Set<String> received = ConcurrentHashMap.newKeySet();
        CountDownLatch all = new CountDownLatch(sent.size());
        DefaultMQPushConsumer consumer = new DefaultMQPushConsumer("billing");
        consumer.setNamesrvAddr(TWIN.getNamesrvAddress());
        consumer.setMqClientApiTimeout(15_000);
        consumer.setConsumeFromWhere(ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET);
        consumer.subscribe(topic, "TagA");
        consumer.registerMessageListener((MessageListenerConcurrently) (msgs, context) -> {
            for (MessageExt m : msgs) {
                if (received.add(m.getMsgId())) {
                    all.countDown();
                }
            }
            return ConsumeConcurrentlyStatus.CONSUME_SUCCESS;
        });
        consumer.start();
        try {
            assertTrue(all.await(60, TimeUnit.SECONDS), "received " + received.size() + " of " + sent.size());
        } finally {
            consumer.shutdown();
        }
        assertEquals(sent, received);
    }
}
