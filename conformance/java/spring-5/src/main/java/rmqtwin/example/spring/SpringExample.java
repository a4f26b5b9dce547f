package rmqtwin.example.spring;

import com.google.gson.JsonObject;
import com.google.gson.JsonParser;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.HashMap;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.apache.rocketmq.client.producer.SendCallback;
import org.apache.rocketmq.client.producer.SendResult;
import org.apache.rocketmq.client.producer.TransactionSendResult;
import org.apache.rocketmq.spring.core.RocketMQTemplate;
import org.springframework.beans.factory.annotation.Value;
import org.springframework.boot.CommandLineRunner;
import org.springframework.boot.SpringApplication;
import org.springframework.boot.autoconfigure.SpringBootApplication;
import org.springframework.messaging.Message;
import org.springframework.messaging.support.MessageBuilder;

/**
 * An ordinary Spring Boot application on rocketmq-spring-boot-starter: nothing in it knows whether
 * {@code rocketmq.name-server} is the twin or a real cluster. It sends with every kind of
 * {@link RocketMQTemplate} send, consumes with {@code @RocketMQMessageListener}s ({@link Listeners}) and
 * decides transactions in a {@code @RocketMQTransactionListener} ({@link TransactionListener}), printing
 * one JSON event per line ({@link Events}) for the test that runs it against both.
 *
 * <p>Spec (first argument, inline JSON or {@code @file}): {@code namesrv}, {@code topic},
 * {@code orderTopic}, {@code txTopic}, {@code group} (consumer groups are derived from it),
 * {@code producerGroup}, optional {@code waitMs} (60000) and {@code delaySeconds} (3). They become the
 * application's properties ({@code rocketmq.name-server}, {@code rocketmq.producer.group},
 * {@code example.*}), as an application.properties file would give them.
 *
 * <p>Sends, in order: {@code syncSend} "sync-0" (tag TagA); {@code asyncSend} "async-0";
 * {@code syncSendOrderly} order-K-i for keys A and B, three each, hashed by key; a delay-level send
 * "delay-0" (level 2); a timer send "timer-0" ({@code syncSendDelayTimeSeconds}, delaySeconds); three
 * {@code sendMessageInTransaction}: tx-commit (committed), tx-rollback (rolled back), tx-unknown (left
 * unknown, committed when the broker checks it back). Then it waits until the listeners have everything
 * expected, a moment more for duplicates, prints a summary and exits.
 */
@SpringBootApplication
public class SpringExample implements CommandLineRunner {
    static final Set<String> EXPECTED = Set.of(
        "sync-0", "async-0", "order-A-0", "order-A-1", "order-A-2", "order-B-0", "order-B-1", "order-B-2",
        "delay-0", "timer-0", "tx-commit", "tx-unknown");

    private final RocketMQTemplate template;
    private final String topic;
    private final String orderTopic;
    private final String txTopic;
    private final long waitMs;
    private final long delaySeconds;

    public SpringExample(
        RocketMQTemplate template,
        @Value("${example.topic}") String topic,
        @Value("${example.order-topic}") String orderTopic,
        @Value("${example.tx-topic}") String txTopic,
        @Value("${example.wait-ms:60000}") long waitMs,
        @Value("${example.delay-seconds:3}") long delaySeconds) {
        this.template = template;
        this.topic = topic;
        this.orderTopic = orderTopic;
        this.txTopic = txTopic;
        this.waitMs = waitMs;
        this.delaySeconds = delaySeconds;
    }

    static void sent(String kind, String body, SendResult result) {
        Map<String, Object> e = Events.event("sent");
        e.put("kind", kind);
        e.put("body", body);
        e.put("sendStatus", String.valueOf(result.getSendStatus()));
        e.put("msgId", result.getMsgId());
        e.put("queueId", result.getMessageQueue().getQueueId());
        if (result instanceof TransactionSendResult tx) {
            e.put("localTransactionState", String.valueOf(tx.getLocalTransactionState()));
            e.put("transactionIdSet", tx.getTransactionId() != null && !tx.getTransactionId().isEmpty());
        }
        Events.emit(e);
    }

    @Override
    public void run(String... args) throws Exception {
        sent("syncSend", "sync-0", template.syncSend(topic + ":TagA", "sync-0"));

        CompletableFuture<SendResult> async = new CompletableFuture<>();
        template.asyncSend(topic + ":TagA", "async-0", new SendCallback() {
            @Override
            public void onSuccess(SendResult result) {
                async.complete(result);
            }

            @Override
            public void onException(Throwable t) {
                async.completeExceptionally(t);
            }
        });
        sent("asyncSend", "async-0", async.get(30, TimeUnit.SECONDS));

        for (int i = 0; i < 3; i++) {
            for (String key : new String[] {"A", "B"}) {
                String body = "order-" + key + "-" + i;
                sent("syncSendOrderly", body, template.syncSendOrderly(orderTopic, body, key));
            }
        }

        Message<String> delayed = MessageBuilder.withPayload("delay-0").build();
        sent("delayLevel", "delay-0", template.syncSend(topic + ":TagA", delayed, 30_000, 2));
        sent("delayTimeSeconds", "timer-0",
            template.syncSendDelayTimeSeconds(topic + ":TagA", "timer-0", delaySeconds));

        for (String body : new String[] {"tx-commit", "tx-rollback", "tx-unknown"}) {
            Message<String> message = MessageBuilder.withPayload(body).build();
            sent("sendMessageInTransaction", body, template.sendMessageInTransaction(txTopic, message, null));
        }

        long deadline = System.currentTimeMillis() + waitMs;
        while (!Events.received().containsAll(EXPECTED) && System.currentTimeMillis() < deadline) {
            Thread.sleep(100);
        }
        // Anything delivered twice, or the rolled-back message, would show within a moment.
        Thread.sleep(2000);
    }

    public static void main(String[] args) throws Exception {
        int status = 0;
        try {
            String text = args[0].startsWith("@") ? Files.readString(Path.of(args[0].substring(1))) : args[0];
            JsonObject spec = JsonParser.parseString(text).getAsJsonObject();
            Map<String, Object> props = new HashMap<>();
            props.put("rocketmq.name-server", spec.get("namesrv").getAsString());
            props.put("rocketmq.producer.group", spec.get("producerGroup").getAsString());
            props.put("rocketmq.producer.send-message-timeout", "30000");
            props.put("example.topic", spec.get("topic").getAsString());
            props.put("example.order-topic", spec.get("orderTopic").getAsString());
            props.put("example.tx-topic", spec.get("txTopic").getAsString());
            String group = spec.get("group").getAsString();
            props.put("example.group", group);
            props.put("example.order-group", group + "_order");
            props.put("example.tx-group", group + "_tx");
            if (spec.has("waitMs")) {
                props.put("example.wait-ms", spec.get("waitMs").getAsString());
            }
            if (spec.has("delaySeconds")) {
                props.put("example.delay-seconds", spec.get("delaySeconds").getAsString());
            }
            SpringApplication app = new SpringApplication(SpringExample.class);
            app.setDefaultProperties(props);
            SpringApplication.exit(app.run());
            Events.emit(Events.event("summary"));
        } catch (Throwable t) {
            t.printStackTrace();
            Map<String, Object> e = Events.event("fatal");
            e.put("message", String.valueOf(t));
            Events.emit(e);
            status = 2;
        }
        System.out.flush();
        Runtime.getRuntime().halt(status);
    }

    static String text(byte[] body) {
        return new String(body, StandardCharsets.UTF_8);
    }
}
