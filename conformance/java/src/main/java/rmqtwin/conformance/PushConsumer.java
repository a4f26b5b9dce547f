package rmqtwin.conformance;

import com.google.gson.JsonElement;
import com.google.gson.JsonObject;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicInteger;
import org.apache.rocketmq.client.consumer.DefaultMQPushConsumer;
import org.apache.rocketmq.client.consumer.MessageSelector;
import org.apache.rocketmq.client.consumer.rebalance.AllocateMessageQueueAveragely;
import org.apache.rocketmq.client.consumer.listener.ConsumeConcurrentlyStatus;
import org.apache.rocketmq.client.consumer.listener.ConsumeOrderlyStatus;
import org.apache.rocketmq.client.consumer.listener.MessageListenerConcurrently;
import org.apache.rocketmq.client.consumer.listener.MessageListenerOrderly;
import org.apache.rocketmq.common.consumer.ConsumeFromWhere;
import org.apache.rocketmq.common.message.MessageExt;

/**
 * Consumes with the real push consumer until {@code expect} distinct messages were consumed or
 * {@code timeoutMs} passed, reporting every delivery.
 *
 * <p>Spec: namesrv, group, topic, expression ("*" or "a || b") or sql (SQL92), subscriptions
 * (list of {topic, expression|sql}), orderly, broadcasting, consumeFromWhere, expect, timeoutMs,
 * settleMs (keep listening after the target for redeliveries), reconsumeLater {keys, tags, bodies,
 * times}: answer RECONSUME_LATER (SUSPEND_CURRENT_QUEUE_A_MOMENT when orderly) for matching
 * messages until they come back with reconsumeTimes &gt;= times; consumeThreads, pullBatchSize,
 * consumeBatchMaxSize (above 1, each "received" event has the size of the listener call's "batch"),
 * maxReconsumeTimes, suspendMillis, pullDelayOnExceptionMs (pullTimeDelayMillsWhenException: the back-off
 * after a failed pull), delayLevelWhenNextConsume, trace (enableMsgTrace) and traceTopic, acl {accessKey,
 * secretKey} (sign with AclClientRPCHook), delayLevels (the broker's messageDelayLevel, "1s 2s ..."): with it, a
 * redelivery carrying a DELAY level says whether it came no sooner than that level's delay after the last
 * delivery of the message ("waitedDelayLevel"; the time itself is the machine's, not compared).
 */
public final class PushConsumer {
    private static final AtomicInteger DELIVERIES = new AtomicInteger();
    private static final AtomicInteger LATER = new AtomicInteger();
    private static final Set<String> CONSUMED = ConcurrentHashMap.newKeySet();
    private static volatile int BATCH_MAX = 1;
    private static final Map<String, Long> LAST_DELIVERY = new ConcurrentHashMap<>();
    private static volatile long[] DELAY_LEVELS_MS = new long[0];

    private PushConsumer() {
    }

    public static void main(String[] args) {
        Events.run("push_consumer", args, PushConsumer::run);
    }

    static void run(JsonObject spec) throws Exception {
        long start = System.nanoTime();
        boolean orderly = Events.bool(spec, "orderly", false);
        DefaultMQPushConsumer consumer = startWithRetries(spec);
        Map<String, Object> started = Events.event("started");
        started.put("driver", "push_consumer");
        started.put("clientVersion", Events.clientVersion());
        started.put("clientId", consumer.buildMQClientId());
        started.put("ts", System.currentTimeMillis());
        Events.emit(started);

        long expect = Events.num(spec, "expect", 0);
        long timeoutMs = Events.num(spec, "timeoutMs", 90_000);
        long deadline = System.currentTimeMillis() + timeoutMs;
        while ((expect <= 0 || CONSUMED.size() < expect) && System.currentTimeMillis() < deadline) {
            Thread.sleep(20);
        }
        boolean reached = expect > 0 && CONSUMED.size() >= expect;
        long settle = Events.num(spec, "settleMs", 0);
        if (settle > 0) {
            Thread.sleep(settle);
        }
        consumer.shutdown();
        Map<String, Object> summary = Events.summary("push_consumer", start);
        summary.put("orderly", orderly);
        summary.put("deliveries", DELIVERIES.get());
        summary.put("consumed", CONSUMED.size());
        summary.put("reconsumeLater", LATER.get());
        summary.put("expected", expect);
        summary.put("timedOut", expect > 0 && !reached);
        Events.emit(summary);
    }

    /**
     * Starts the consumer, retrying a start that failed on a name server round trip (seen with
     * the 5.x client on a heavily loaded machine); each failure is reported as "start_failed".
     * A consumer cannot be started twice, so every attempt builds a new one.
     */
    static DefaultMQPushConsumer startWithRetries(JsonObject spec) throws Exception {
        int attempts = (int) Events.num(spec, "startAttempts", 3);
        for (int attempt = 1; ; attempt++) {
            DefaultMQPushConsumer consumer = build(spec);
            try {
                consumer.start();
                return consumer;
            } catch (RuntimeException | org.apache.rocketmq.client.exception.MQClientException ex) {
                consumer.shutdown();
                if (attempt >= attempts || !Events.isTransportFailure(ex)) {
                    throw ex;
                }
                Map<String, Object> e = Events.error(ex);
                e.put("event", "start_failed");
                e.put("attempt", attempt);
                Events.emit(e);
                Thread.sleep(1000);
            }
        }
    }

    static DefaultMQPushConsumer build(JsonObject spec) throws Exception {
        DefaultMQPushConsumer consumer = new DefaultMQPushConsumer(
            Events.required(spec, "group"), Events.rpcHook(spec), new AllocateMessageQueueAveragely(),
            Events.bool(spec, "trace", false), Events.str(spec, "traceTopic", null));
        Events.connect(consumer, Events.required(spec, "namesrv"), Events.instanceName("push"), spec);
        consumer.setConsumeFromWhere(
            ConsumeFromWhere.valueOf(Events.str(spec, "consumeFromWhere", "CONSUME_FROM_FIRST_OFFSET")));
        Events.setEnum(consumer, "setMessageModel", Events.bool(spec, "broadcasting", false)
            ? "BROADCASTING" : "CLUSTERING");
        int threads = (int) Events.num(spec, "consumeThreads", 4);
        consumer.setConsumeThreadMin(threads);
        consumer.setConsumeThreadMax(threads);
        consumer.setPullBatchSize((int) Events.num(spec, "pullBatchSize", 32));
        BATCH_MAX = (int) Events.num(spec, "consumeBatchMaxSize", 1);
        DELAY_LEVELS_MS = delayLevels(Events.str(spec, "delayLevels", ""));
        consumer.setConsumeMessageBatchMaxSize(BATCH_MAX);
        consumer.setMaxReconsumeTimes((int) Events.num(spec, "maxReconsumeTimes", 16));
        consumer.setSuspendCurrentQueueTimeMillis(Events.num(spec, "suspendMillis", 1000));
        if (spec.has("pullDelayOnExceptionMs")) {
            // The impl copied DefaultMQPushConsumer's value when it was built: set it there.
            consumer.getDefaultMQPushConsumerImpl()
                .setPullTimeDelayMillsWhenException(Events.num(spec, "pullDelayOnExceptionMs", 1000));
        }
        if (spec.has("subscriptions")) {
            for (JsonElement e : Events.array(spec, "subscriptions")) {
                subscribe(consumer, e.getAsJsonObject());
            }
        } else {
            subscribe(consumer, spec);
        }
        JsonObject later = spec.has("reconsumeLater") ? spec.getAsJsonObject("reconsumeLater") : new JsonObject();
        int delayLevel = (int) Events.num(spec, "delayLevelWhenNextConsume", 0);
        boolean orderly = Events.bool(spec, "orderly", false);
        if (orderly) {
            consumer.registerMessageListener((MessageListenerOrderly) (msgs, ctx) ->
                consume(msgs, later, "SUSPEND_CURRENT_QUEUE_A_MOMENT", "SUCCESS")
                    ? ConsumeOrderlyStatus.SUCCESS : ConsumeOrderlyStatus.SUSPEND_CURRENT_QUEUE_A_MOMENT);
        } else {
            consumer.registerMessageListener((MessageListenerConcurrently) (msgs, ctx) -> {
                if (delayLevel != 0) {
                    ctx.setDelayLevelWhenNextConsume(delayLevel);
                }
                return consume(msgs, later, "RECONSUME_LATER", "CONSUME_SUCCESS")
                    ? ConsumeConcurrentlyStatus.CONSUME_SUCCESS : ConsumeConcurrentlyStatus.RECONSUME_LATER;
            });
        }
        return consumer;
    }

    static void subscribe(DefaultMQPushConsumer consumer, JsonObject s) throws Exception {
        String topic = Events.required(s, "topic");
        if (s.has("sql")) {
            consumer.subscribe(topic, MessageSelector.bySql(Events.str(s, "sql", "TRUE")));
        } else {
            consumer.subscribe(topic, Events.str(s, "expression", "*"));
        }
    }

    /** Reports each message; returns false when the batch is to be consumed again later. */
    static boolean consume(List<MessageExt> msgs, JsonObject later, String laterName, String okName) {
        boolean ok = true;
        for (MessageExt m : msgs) {
            if (wantsLater(m, later)) {
                ok = false;
            }
        }
        for (MessageExt m : msgs) {
            DELIVERIES.incrementAndGet();
            Map<String, Object> e = Events.event("received");
            e.putAll(Events.message(m));
            e.put("answer", ok ? okName : laterName);
            e.put("thread", Thread.currentThread().getName());
            e.put("ts", System.currentTimeMillis());
            if (BATCH_MAX > 1) {
                e.put("batch", msgs.size());
            }
            long now = System.currentTimeMillis();
            Long previous = LAST_DELIVERY.put(m.getMsgId(), now);
            String level = m.getProperty("DELAY");
            if (previous != null && level != null && DELAY_LEVELS_MS.length > 0) {
                int n = Integer.parseInt(level);
                if (n >= 1 && n <= DELAY_LEVELS_MS.length) {
                    e.put("waitedDelayLevel", now - previous >= DELAY_LEVELS_MS[n - 1]);
                }
            }
            Events.emit(e);
            if (ok) {
                CONSUMED.add(m.getMsgId());
            }
        }
        if (!ok) {
            LATER.incrementAndGet();
        }
        return ok;
    }

    /** "1s 5s 10s 30s 1m 2m 1h 2d" (messageDelayLevel) as milliseconds per level. */
    static long[] delayLevels(String text) {
        String[] parts = text.trim().isEmpty() ? new String[0] : text.trim().split("\\s+");
        long[] out = new long[parts.length];
        for (int i = 0; i < parts.length; i++) {
            String p = parts[i];
            char unit = p.charAt(p.length() - 1);
            long n = Long.parseLong(p.substring(0, p.length() - 1));
            out[i] = n * (unit == 's' ? 1_000L : unit == 'm' ? 60_000L : unit == 'h' ? 3_600_000L : 86_400_000L);
        }
        return out;
    }

    static boolean wantsLater(MessageExt m, JsonObject later) {
        if (later.size() == 0 || m.getReconsumeTimes() >= Events.num(later, "times", 1)) {
            return false;
        }
        for (String k : Events.strings(later, "keys")) {
            if (m.getKeys() != null && List.of(m.getKeys().split(" ")).contains(k)) {
                return true;
            }
        }
        for (String t : Events.strings(later, "tags")) {
            if (t.equals(m.getTags())) {
                return true;
            }
        }
        String body = m.getBody() == null ? null : Events.utf8(m.getBody());
        for (String b : Events.strings(later, "bodies")) {
            if (b.equals(body)) {
                return true;
            }
        }
        return false;
    }
}
