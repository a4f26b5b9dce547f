package rmqtwin.conformance.grpc;

import com.google.gson.Gson;
import com.google.gson.GsonBuilder;
import com.google.gson.JsonObject;
import com.google.gson.JsonParser;
import java.io.PrintStream;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import org.apache.rocketmq.client.apis.ClientConfiguration;
import org.apache.rocketmq.client.apis.ClientServiceProvider;
import org.apache.rocketmq.client.apis.consumer.ConsumeResult;
import org.apache.rocketmq.client.apis.consumer.FilterExpression;
import org.apache.rocketmq.client.apis.consumer.FilterExpressionType;
import org.apache.rocketmq.client.apis.consumer.PushConsumer;
import org.apache.rocketmq.client.apis.consumer.SimpleConsumer;
import org.apache.rocketmq.client.apis.message.Message;
import org.apache.rocketmq.client.apis.message.MessageView;
import org.apache.rocketmq.client.apis.producer.Producer;
import org.apache.rocketmq.client.apis.producer.SendReceipt;
import org.apache.rocketmq.client.apis.producer.Transaction;
import org.apache.rocketmq.client.apis.producer.TransactionResolution;

/**
 * The gRPC client (rocketmq-client-java 5.x) through a rocketmq-proxy: every message type and both
 * consumer kinds, one JSON event per stdout line, so Python can compare a run through a proxy in front
 * of the twin with a run through one in front of real RocketMQ.
 *
 * <p>Spec (first argument, inline JSON or {@code @file}): {@code endpoint} (the proxy's gRPC address),
 * {@code steps} (any of normal, fifo, delay, transaction; default all), and per step its topic and
 * group: {@code normalTopic}/{@code normalGroup}, {@code fifoTopic}/{@code fifoGroup} (a group the broker
 * knows as orderly), {@code delayTopic}/{@code delayGroup}, {@code txTopic}/{@code txGroup}; optional
 * {@code delayMs} (3000) and {@code waitMs} (60000, how long a step waits for what it expects).
 *
 * <ul>
 *   <li>normal: 4 sends; a SimpleConsumer receives them, acks all but normal-0, whose invisible
 *       duration it changes to 2 s; normal-0 comes back (attempt 2) and is acked; a last receive finds
 *       nothing.</li>
 *   <li>fifo: 6 sends in message groups A and B; a PushConsumer receives them, in order per group.</li>
 *   <li>delay: one send with a delivery timestamp {@code delayMs} ahead; a SimpleConsumer receives it
 *       no earlier.</li>
 *   <li>transaction: tx-commit committed, tx-rollback rolled back, tx-unknown left open and committed
 *       by the checker when the broker checks back (the checker answers the others as they ended); a
 *       SimpleConsumer receives tx-commit and tx-unknown only.</li>
 * </ul>
 * A step's last receive ("drained") names what it still found: 5.5.0 writes the op messages that end
 * half messages in batches (every {@code transactionOpBatchInterval}, 3 s), so a check-back may ask
 * about a message ended just before, and a second commit of tx-unknown delivers it again.
 * <ul>
 * </ul>
 */
public final class GrpcScenario {
    private static final Gson GSON = new GsonBuilder().disableHtmlEscaping().serializeNulls().create();
    private static final PrintStream OUT = System.out;
    private static final ClientServiceProvider PROVIDER = ClientServiceProvider.loadService();

    private GrpcScenario() {
    }

    static synchronized void emit(Map<String, Object> event) {
        OUT.println(GSON.toJson(event));
        OUT.flush();
    }

    static Map<String, Object> event(String kind, String step) {
        Map<String, Object> e = new LinkedHashMap<>();
        e.put("event", kind);
        e.put("step", step);
        e.put("time", System.currentTimeMillis());
        return e;
    }

    static void error(String step, String what, Throwable t) {
        Map<String, Object> e = event("error", step);
        e.put("what", what);
        e.put("type", t.getClass().getSimpleName());
        e.put("message", String.valueOf(t.getMessage()));
        emit(e);
    }

    static String body(MessageView view) {
        ByteBuffer buffer = view.getBody().duplicate();
        byte[] bytes = new byte[buffer.remaining()];
        buffer.get(bytes);
        return new String(bytes, StandardCharsets.UTF_8);
    }

    static Map<String, Object> received(String step, MessageView view, long sentAt) {
        Map<String, Object> e = event("received", step);
        e.put("body", body(view));
        e.put("topic", view.getTopic());
        e.put("tag", view.getTag().orElse(null));
        e.put("keys", new ArrayList<>(view.getKeys()));
        e.put("messageGroup", view.getMessageGroup().orElse(null));
        e.put("deliveryAttempt", view.getDeliveryAttempt());
        e.put("messageId", view.getMessageId().toString());
        if (sentAt > 0) {
            e.put("sinceSendMs", System.currentTimeMillis() - sentAt);
        }
        return e;
    }

    static Message message(String topic, String body, String group, Long deliverAt) {
        var builder = PROVIDER.newMessageBuilder()
            .setTopic(topic)
            .setTag("TagA")
            .setKeys("key-" + body)
            .setBody(body.getBytes(StandardCharsets.UTF_8));
        if (group != null) {
            builder.setMessageGroup(group);
        }
        if (deliverAt != null) {
            builder.setDeliveryTimestamp(deliverAt);
        }
        return builder.build();
    }

    static void sent(String step, String body, SendReceipt receipt) {
        Map<String, Object> e = event("sent", step);
        e.put("body", body);
        e.put("messageId", receipt.getMessageId().toString());
        emit(e);
    }

    static SimpleConsumer simpleConsumer(ClientConfiguration conf, String group, String topic) throws Exception {
        return PROVIDER.newSimpleConsumerBuilder()
            .setClientConfiguration(conf)
            .setConsumerGroup(group)
            .setAwaitDuration(Duration.ofSeconds(3))
            .setSubscriptionExpressions(
                Collections.singletonMap(topic, new FilterExpression("*", FilterExpressionType.TAG)))
            .build();
    }

    static List<MessageView> receive(String step, SimpleConsumer consumer, Duration invisible) {
        try {
            return consumer.receive(16, invisible);
        } catch (Exception e) {
            // 5.0.x answers an empty long poll with an empty list; a proxy error is an event.
            error(step, "receive", e);
            return List.of();
        }
    }

    /** A last receive: how many messages are still there, and which (each acked). */
    static void drain(String step, SimpleConsumer consumer) throws Exception {
        List<String> bodies = new ArrayList<>();
        for (MessageView view : receive(step, consumer, Duration.ofSeconds(20))) {
            bodies.add(body(view));
            consumer.ack(view);
        }
        Map<String, Object> e = event("drained", step);
        e.put("left", bodies.size());
        e.put("bodies", bodies);
        emit(e);
    }

    static void normal(ClientConfiguration conf, JsonObject spec, long waitMs) throws Exception {
        String step = "normal";
        String topic = spec.get("normalTopic").getAsString();
        try (Producer producer = PROVIDER.newProducerBuilder().setClientConfiguration(conf).setTopics(topic).build()) {
            for (int i = 0; i < 4; i++) {
                String body = "normal-" + i;
                sent(step, body, producer.send(message(topic, body, null, null)));
            }
        }
        try (SimpleConsumer consumer = simpleConsumer(conf, spec.get("normalGroup").getAsString(), topic)) {
            long deadline = System.currentTimeMillis() + waitMs;
            int acked = 0;
            boolean changed = false;
            boolean returned = false;
            while (System.currentTimeMillis() < deadline && (acked < 4 || !returned)) {
                for (MessageView view : receive(step, consumer, Duration.ofSeconds(20))) {
                    emit(received(step, view, 0));
                    if (body(view).equals("normal-0") && !changed) {
                        consumer.changeInvisibleDuration(view, Duration.ofSeconds(2));
                        changed = true;
                        emit(event("changed", step));
                        continue;
                    }
                    if (body(view).equals("normal-0")) {
                        returned = true;
                    }
                    consumer.ack(view);
                    acked++;
                    Map<String, Object> e = event("acked", step);
                    e.put("body", body(view));
                    emit(e);
                }
            }
            drain(step, consumer);
        }
    }

    static void fifo(ClientConfiguration conf, JsonObject spec, long waitMs) throws Exception {
        String step = "fifo";
        String topic = spec.get("fifoTopic").getAsString();
        try (Producer producer = PROVIDER.newProducerBuilder().setClientConfiguration(conf).setTopics(topic).build()) {
            for (int i = 0; i < 6; i++) {
                String group = i % 2 == 0 ? "A" : "B";
                String body = "fifo-" + group + "-" + (i / 2);
                sent(step, body, producer.send(message(topic, body, group, null)));
            }
        }
        Map<String, Boolean> seen = new ConcurrentHashMap<>();
        try (PushConsumer consumer = PROVIDER.newPushConsumerBuilder()
            .setClientConfiguration(conf)
            .setConsumerGroup(spec.get("fifoGroup").getAsString())
            .setSubscriptionExpressions(
                Collections.singletonMap(topic, new FilterExpression("*", FilterExpressionType.TAG)))
            .setMessageListener(view -> {
                emit(received(step, view, 0));
                seen.put(body(view), true);
                return ConsumeResult.SUCCESS;
            })
            .build()) {
            long deadline = System.currentTimeMillis() + waitMs;
            while (seen.size() < 6 && System.currentTimeMillis() < deadline) {
                Thread.sleep(100);
            }
            // Anything delivered twice shows within a moment of the last first delivery.
            Thread.sleep(2000);
        }
    }

    static void delay(ClientConfiguration conf, JsonObject spec, long waitMs) throws Exception {
        String step = "delay";
        String topic = spec.get("delayTopic").getAsString();
        long delayMs = spec.has("delayMs") ? spec.get("delayMs").getAsLong() : 3000;
        long sentAt;
        try (SimpleConsumer consumer = simpleConsumer(conf, spec.get("delayGroup").getAsString(), topic)) {
            try (Producer producer = PROVIDER.newProducerBuilder().setClientConfiguration(conf).setTopics(topic).build()) {
                sentAt = System.currentTimeMillis();
                sent(step, "delay-0", producer.send(message(topic, "delay-0", null, sentAt + delayMs)));
            }
            long deadline = System.currentTimeMillis() + waitMs;
            boolean got = false;
            while (!got && System.currentTimeMillis() < deadline) {
                for (MessageView view : receive(step, consumer, Duration.ofSeconds(20))) {
                    Map<String, Object> e = received(step, view, sentAt);
                    e.put("deliveryTimestampSet", view.getDeliveryTimestamp().isPresent());
                    emit(e);
                    consumer.ack(view);
                    got = true;
                }
            }
        }
    }

    static void transaction(ClientConfiguration conf, JsonObject spec, long waitMs) throws Exception {
        String step = "transaction";
        String topic = spec.get("txTopic").getAsString();
        try (SimpleConsumer consumer = simpleConsumer(conf, spec.get("txGroup").getAsString(), topic);
             Producer producer = PROVIDER.newProducerBuilder()
                 .setClientConfiguration(conf)
                 .setTopics(topic)
                 .setTransactionChecker(view -> {
                     Map<String, Object> e = event("checked", step);
                     e.put("body", body(view));
                     emit(e);
                     // What a real application's checker answers from its own records: tx-unknown
                     // committed, the others as they ended (5.5.0 may check one whose end it has not
                     // yet recorded; committing tx-commit again would deliver it twice).
                     return body(view).equals("tx-unknown")
                         ? TransactionResolution.COMMIT : TransactionResolution.ROLLBACK;
                 })
                 .build()) {
            for (String body : new String[] {"tx-commit", "tx-rollback", "tx-unknown"}) {
                Transaction tx = producer.beginTransaction();
                sent(step, body, producer.send(message(topic, body, null, null), tx));
                if (body.equals("tx-commit")) {
                    tx.commit();
                } else if (body.equals("tx-rollback")) {
                    tx.rollback();
                }
            }
            long deadline = System.currentTimeMillis() + waitMs;
            int got = 0;
            while (got < 2 && System.currentTimeMillis() < deadline) {
                for (MessageView view : receive(step, consumer, Duration.ofSeconds(20))) {
                    emit(received(step, view, 0));
                    consumer.ack(view);
                    got++;
                }
            }
            drain(step, consumer);
        }
    }

    public static void main(String[] args) {
        int status = 0;
        try {
            String text = args[0].startsWith("@") ? Files.readString(Path.of(args[0].substring(1))) : args[0];
            JsonObject spec = JsonParser.parseString(text).getAsJsonObject();
            ClientConfiguration conf = ClientConfiguration.newBuilder()
                .setEndpoints(spec.get("endpoint").getAsString())
                .enableSsl(false)
                // A proxy just started on a loaded machine answers its first calls slowly.
                .setRequestTimeout(Duration.ofSeconds(30))
                .build();
            long waitMs = spec.has("waitMs") ? spec.get("waitMs").getAsLong() : 60000;
            List<String> steps = new ArrayList<>();
            if (spec.has("steps")) {
                spec.getAsJsonArray("steps").forEach(s -> steps.add(s.getAsString()));
            } else {
                steps.addAll(List.of("normal", "fifo", "delay", "transaction"));
            }
            for (String step : steps) {
                emit(event("step", step));
                try {
                    switch (step) {
                        case "normal" -> normal(conf, spec, waitMs);
                        case "fifo" -> fifo(conf, spec, waitMs);
                        case "delay" -> delay(conf, spec, waitMs);
                        case "transaction" -> transaction(conf, spec, waitMs);
                        default -> throw new IllegalArgumentException("unknown step " + step);
                    }
                } catch (Exception e) {
                    error(step, "step", e);
                    e.printStackTrace();
                }
            }
            emit(event("summary", "all"));
        } catch (Throwable t) {
            t.printStackTrace();
            status = 2;
        }
        System.out.flush();
        Runtime.getRuntime().halt(status);
    }
}
