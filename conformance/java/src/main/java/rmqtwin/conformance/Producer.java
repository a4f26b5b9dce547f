package rmqtwin.conformance;

import com.google.gson.JsonElement;
import com.google.gson.JsonObject;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Base64;
import java.util.IdentityHashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeSet;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.apache.rocketmq.client.exception.MQBrokerException;
import org.apache.rocketmq.client.hook.SendMessageContext;
import org.apache.rocketmq.client.hook.SendMessageHook;
import org.apache.rocketmq.client.producer.DefaultMQProducer;
import org.apache.rocketmq.client.producer.LocalTransactionState;
import org.apache.rocketmq.client.producer.MessageQueueSelector;
import org.apache.rocketmq.client.producer.SendCallback;
import org.apache.rocketmq.client.producer.SendResult;
import org.apache.rocketmq.client.producer.TransactionListener;
import org.apache.rocketmq.client.producer.TransactionMQProducer;
import org.apache.rocketmq.client.producer.TransactionSendResult;
import org.apache.rocketmq.common.message.Message;
import org.apache.rocketmq.common.message.MessageExt;
import org.apache.rocketmq.common.message.MessageQueue;

/**
 * Sends messages with the real producer and reports every SendResult.
 *
 * <p>Spec: namesrv, topic, group, mode (sync|async|oneway|batch|ordered|transaction), messages
 * (list of {body|bodyBase64|bodySize, tags, keys, properties, delayLevel, topic, mode, queueId,
 * shardingKey, transaction, check}) or count (+ bodyPrefix), tags/keys/properties defaults,
 * batchSize, sendTimeoutMs, retryTimes, compressOver, maxMessageSize, expectChecks, timeoutMs,
 * trace (enableMsgTrace: trace records to RMQ_SYS_TRACE_TOPIC or traceTopic), settleMs (linger before
 * shutdown), acl {accessKey, secretKey} (sign with AclClientRPCHook), heartbeat (send the heartbeat that
 * registers the producer group with the brokers once the route is known, not 30 s later), intervalMs (pause
 * between the sends of a sync/async/oneway run), awaitEach (wait for an async send's callback before the next
 * send: in flight together, a sync send's timeout closes the channel under the async one), sendLatencyFaultEnable, pollNameServerIntervalMs (how often
 * the client refreshes its routes; 30 s by default), attempts (report every attempt the client makes, retries
 * included, as "attempt" events: index, brokerName, queueId, brokerAddr, outcome = the send status, "code N"
 * for a broker's refusal or the exception's simple name, ts and latencyMs; the summary gets attemptOutcomes, the distinct
 * "brokerName outcome" pairs, sorted).
 */
public final class Producer {
    private static final AtomicInteger OK = new AtomicInteger();
    private static final AtomicInteger FAILED = new AtomicInteger();
    private static final AtomicInteger CHECKS = new AtomicInteger();
    private static final Map<Message, Integer> INDEX = new IdentityHashMap<>();
    private static final TreeSet<String> OUTCOMES = new TreeSet<>();

    private Producer() {
    }

    public static void main(String[] args) {
        Events.run("producer", args, Producer::run);
    }

    static void run(JsonObject spec) throws Exception {
        long start = System.nanoTime();
        String mode = Events.str(spec, "mode", "sync");
        String topic = Events.required(spec, "topic");
        List<JsonObject> specs = messageSpecs(spec);
        List<Message> messages = new ArrayList<>();
        for (int i = 0; i < specs.size(); i++) {
            messages.add(build(topic, spec, specs.get(i)));
        }
        long timeoutMs = Events.num(spec, "timeoutMs", 30_000);

        Map<String, Integer> txIndex = new ConcurrentHashMap<>();
        DefaultMQProducer producer;
        if ("transaction".equals(mode)) {
            TransactionMQProducer tx = new TransactionMQProducer(Events.str(spec, "group", "rmqtwin_tx_producer"), Events.rpcHook(spec));
            tx.setTransactionListener(new Listener(specs, txIndex));
            producer = tx;
        } else {
            producer = new DefaultMQProducer(Events.str(spec, "group", "rmqtwin_producer"), Events.rpcHook(spec),
                Events.bool(spec, "trace", false), Events.str(spec, "traceTopic", null));
        }
        Events.connect(producer, Events.required(spec, "namesrv"), Events.instanceName("producer"), spec);
        producer.setSendMsgTimeout((int) Events.num(spec, "sendTimeoutMs", 5000));
        producer.setRetryTimesWhenSendFailed((int) Events.num(spec, "retryTimes", 2));
        producer.setRetryTimesWhenSendAsyncFailed((int) Events.num(spec, "retryTimes", 2));
        producer.setCompressMsgBodyOverHowmuch((int) Events.num(spec, "compressOver", 4096));
        producer.setMaxMessageSize((int) Events.num(spec, "maxMessageSize", 4 * 1024 * 1024));
        producer.setVipChannelEnabled(Events.bool(spec, "vipChannel", false));
        producer.setSendLatencyFaultEnable(Events.bool(spec, "sendLatencyFaultEnable", false));
        producer.setPollNameServerInterval((int) Events.num(spec, "pollNameServerIntervalMs", 30_000));
        if (Events.bool(spec, "attempts", false)) {
            synchronized (INDEX) {
                for (int i = 0; i < messages.size(); i++) {
                    INDEX.put(messages.get(i), i);
                }
            }
            producer.getDefaultMQProducerImpl().registerSendMessageHook(new AttemptHook());
        }
        producer.start();
        Map<String, Object> started = Events.event("started");
        started.put("driver", "producer");
        started.put("clientVersion", Events.clientVersion());
        Events.emit(started);

        // Resolve the route first, retrying only transport failures (a loaded machine), so the
        // sends below meet the broker's answers rather than a lost name server round trip. A
        // topic that does not exist yet is fine: the first send creates it.
        DefaultMQProducer routed = producer;
        Events.retrying("route", (int) Events.num(spec, "startAttempts", 3), () -> {
            try {
                routed.fetchPublishMessageQueues(topic);
            } catch (Exception ex) {
                if (Events.isTransportFailure(ex)) {
                    throw ex;
                }
            }
        });
        if (Events.bool(spec, "heartbeat", false)) {
            // What the client's 30-second heartbeat would do: register the group with the brokers now.
            producer.getDefaultMQProducerImpl().getMqClientFactory().sendHeartbeatToAllBrokerWithLock();
        }
        CountDownLatch pending = new CountDownLatch(countAsync(mode, specs));
        try {
            switch (mode) {
                case "batch":
                    sendBatches(producer, messages, (int) Events.num(spec, "batchSize", messages.size()));
                    break;
                case "ordered":
                    for (int i = 0; i < messages.size(); i++) {
                        sendOrdered(producer, messages.get(i), specs.get(i), i);
                    }
                    break;
                case "transaction":
                    for (int i = 0; i < messages.size(); i++) {
                        sendTransactional((TransactionMQProducer) producer, messages.get(i), i, txIndex);
                    }
                    break;
                default:
                    long intervalMs = Events.num(spec, "intervalMs", 0);
                    boolean awaitEach = Events.bool(spec, "awaitEach", false);
                    for (int i = 0; i < messages.size(); i++) {
                        if (i > 0 && intervalMs > 0) {
                            Thread.sleep(intervalMs);
                        }
                        String m = Events.str(specs.get(i), "mode", mode);
                        CountDownLatch answered = new CountDownLatch(1);
                        send(producer, messages.get(i), m, i, () -> {
                            answered.countDown();
                            pending.countDown();
                        });
                        if (awaitEach && "async".equals(m)) {
                            answered.await(timeoutMs, TimeUnit.MILLISECONDS);
                        }
                    }
            }
            boolean allAnswered = pending.await(timeoutMs, TimeUnit.MILLISECONDS);
            long expectChecks = Events.num(spec, "expectChecks", 0);
            long deadline = System.currentTimeMillis() + timeoutMs;
            while (CHECKS.get() < expectChecks && System.currentTimeMillis() < deadline) {
                Thread.sleep(50);
            }
            Map<String, Object> summary = Events.summary("producer", start);
            summary.put("mode", mode);
            summary.put("messages", messages.size());
            summary.put("sent", OK.get());
            summary.put("errors", FAILED.get());
            summary.put("checks", CHECKS.get());
            summary.put("timedOut", !allAnswered || CHECKS.get() < expectChecks);
            if (Events.bool(spec, "attempts", false)) {
                synchronized (OUTCOMES) {
                    summary.put("attemptOutcomes", new ArrayList<>(OUTCOMES));
                }
            }
            Events.emit(summary);
            // Linger before shutdown (the trace dispatcher sends its records asynchronously).
            Thread.sleep(Events.num(spec, "settleMs", 0));
        } finally {
            producer.shutdown();
        }
    }

    static List<JsonObject> messageSpecs(JsonObject spec) {
        List<JsonObject> out = new ArrayList<>();
        if (spec.has("messages")) {
            for (JsonElement e : Events.array(spec, "messages")) {
                out.add(e.getAsJsonObject());
            }
            return out;
        }
        long count = Events.num(spec, "count", 1);
        String prefix = Events.str(spec, "bodyPrefix", "msg-");
        for (int i = 0; i < count; i++) {
            JsonObject m = new JsonObject();
            m.addProperty("body", prefix + i);
            out.add(m);
        }
        return out;
    }

    static Message build(String topic, JsonObject spec, JsonObject m) {
        byte[] body;
        if (m.has("bodyBase64")) {
            body = Base64.getDecoder().decode(Events.str(m, "bodyBase64", ""));
        } else if (m.has("bodySize")) {
            body = new byte[(int) Events.num(m, "bodySize", 0)];
            for (int i = 0; i < body.length; i++) {
                body[i] = (byte) ('a' + i % 26);
            }
        } else {
            body = Events.str(m, "body", "").getBytes(StandardCharsets.UTF_8);
        }
        Message msg = new Message(Events.str(m, "topic", topic), body);
        String tags = Events.str(m, "tags", Events.str(spec, "tags", null));
        if (tags != null) {
            msg.setTags(tags);
        }
        List<String> keys = Events.strings(m, "keys");
        if (keys.isEmpty()) {
            keys = Events.strings(spec, "keys");
        }
        if (!keys.isEmpty()) {
            msg.setKeys(keys);
        }
        for (JsonObject props : new JsonObject[] {spec.getAsJsonObject("properties"), m.getAsJsonObject("properties")}) {
            if (props != null) {
                for (Map.Entry<String, JsonElement> p : props.entrySet()) {
                    msg.putUserProperty(p.getKey(), p.getValue().getAsString());
                }
            }
        }
        long delay = Events.num(m, "delayLevel", Events.num(spec, "delayLevel", 0));
        if (delay > 0) {
            msg.setDelayTimeLevel((int) delay);
        }
        return msg;
    }

    static int countAsync(String mode, List<JsonObject> specs) {
        int n = 0;
        for (JsonObject s : specs) {
            if ("async".equals(Events.str(s, "mode", mode))) {
                n++;
            }
        }
        return n;
    }

    static Map<String, Object> sentEvent(int index, String mode, Message msg) {
        Map<String, Object> e = Events.event("sent");
        e.put("index", index);
        e.put("mode", mode);
        e.put("uniqKey", msg.getProperty("UNIQ_KEY"));
        return e;
    }

    static void failed(int index, String mode, Throwable t) {
        failed(index, mode, t, -1);
    }

    /** A failed send; {@code startNanos} (when known) gives its latencyMs, e.g. against sendMsgTimeout. */
    static void failed(int index, String mode, Throwable t, long startNanos) {
        FAILED.incrementAndGet();
        Map<String, Object> e = Events.error(t);
        e.put("index", index);
        e.put("mode", mode);
        if (startNanos >= 0) {
            e.put("latencyMs", (System.nanoTime() - startNanos) / 1_000_000);
        }
        Events.emit(e);
    }

    static void succeeded(Map<String, Object> e, SendResult r) {
        OK.incrementAndGet();
        Events.putSendResult(e, r);
        Events.emit(e);
    }

    /** One send in {@code mode}; {@code answered} runs once an async send's callback has reported. */
    static void send(DefaultMQProducer producer, Message msg, String mode, int index, Runnable answered) {
        long start = System.nanoTime();
        try {
            switch (mode) {
                case "sync":
                    SendResult result = producer.send(msg);
                    Map<String, Object> done = sentEvent(index, mode, msg);
                    done.put("latencyMs", (System.nanoTime() - start) / 1_000_000);
                    succeeded(done, result);
                    break;
                case "oneway":
                    producer.sendOneway(msg);
                    OK.incrementAndGet();
                    Map<String, Object> e = sentEvent(index, mode, msg);
                    e.put("msgId", msg.getProperty("UNIQ_KEY"));
                    e.put("status", null);
                    Events.emit(e);
                    break;
                case "async":
                    producer.send(msg, new SendCallback() {
                        @Override
                        public void onSuccess(SendResult r) {
                            Map<String, Object> done = sentEvent(index, mode, msg);
                            done.put("latencyMs", (System.nanoTime() - start) / 1_000_000);
                            succeeded(done, r);
                            answered.run();
                        }

                        @Override
                        public void onException(Throwable t) {
                            failed(index, mode, t, start);
                            answered.run();
                        }
                    });
                    break;
                default:
                    throw new IllegalArgumentException("unknown send mode " + mode);
            }
        } catch (Exception ex) {
            failed(index, mode, ex, start);
            if ("async".equals(mode)) {
                answered.run();
            }
        }
    }

    static void sendBatches(DefaultMQProducer producer, List<Message> messages, int batchSize) {
        for (int from = 0; from < messages.size(); from += Math.max(1, batchSize)) {
            int to = Math.min(messages.size(), from + Math.max(1, batchSize));
            List<Message> batch = messages.subList(from, to);
            try {
                SendResult r = producer.send(batch);
                String[] ids = r.getMsgId() == null ? new String[0] : r.getMsgId().split(",");
                String[] offsetIds = r.getOffsetMsgId() == null ? new String[0] : r.getOffsetMsgId().split(",");
                for (int j = 0; j < batch.size(); j++) {
                    Map<String, Object> e = sentEvent(from + j, "batch", batch.get(j));
                    Events.putSendResult(e, r);
                    e.put("batchMsgId", r.getMsgId());
                    e.put("msgId", j < ids.length ? ids[j] : null);
                    e.put("offsetMsgId", j < offsetIds.length ? offsetIds[j] : null);
                    e.put("queueOffset", r.getQueueOffset() + j);
                    e.put("batchIndex", j);
                    OK.incrementAndGet();
                    Events.emit(e);
                }
            } catch (Exception ex) {
                for (int j = from; j < to; j++) {
                    failed(j, "batch", ex);
                }
            }
        }
    }

    static void sendOrdered(DefaultMQProducer producer, Message msg, JsonObject m, int index) {
        MessageQueueSelector selector = (mqs, message, arg) -> {
            JsonObject s = (JsonObject) arg;
            int q;
            if (s.has("queueId")) {
                q = (int) Events.num(s, "queueId", 0);
            } else {
                q = Math.abs(Events.str(s, "shardingKey", "").hashCode());
            }
            return mqs.get(q % mqs.size());
        };
        try {
            SendResult result = producer.send(msg, selector, m);
            Map<String, Object> e = sentEvent(index, "ordered", msg);
            e.put("shardingKey", Events.str(m, "shardingKey", null));
            succeeded(e, result);
        } catch (Exception ex) {
            failed(index, "ordered", ex);
        }
    }

    static void sendTransactional(TransactionMQProducer producer, Message msg, int index, Map<String, Integer> txIndex) {
        try {
            TransactionSendResult r = producer.sendMessageInTransaction(msg, index);
            Map<String, Object> e = sentEvent(index, "transaction", msg);
            e.put("localTransactionState", String.valueOf(r.getLocalTransactionState()));
            succeeded(e, r);
        } catch (Exception ex) {
            failed(index, "transaction", ex);
        }
    }

    static LocalTransactionState state(String answer) {
        switch (answer == null ? "commit" : answer.toLowerCase()) {
            case "commit":
                return LocalTransactionState.COMMIT_MESSAGE;
            case "rollback":
                return LocalTransactionState.ROLLBACK_MESSAGE;
            case "unknown":
            case "unknow":
                return LocalTransactionState.UNKNOW;
            default:
                throw new IllegalArgumentException("transaction answer must be commit, rollback or unknown: " + answer);
        }
    }

    /** Answers the local transaction and the broker's check-back from each message's spec. */
    static final class Listener implements TransactionListener {
        private final List<JsonObject> specs;
        private final Map<String, Integer> txIndex;

        Listener(List<JsonObject> specs, Map<String, Integer> txIndex) {
            this.specs = specs;
            this.txIndex = txIndex;
        }

        @Override
        public LocalTransactionState executeLocalTransaction(Message msg, Object arg) {
            int index = (Integer) arg;
            String uniq = msg.getProperty("UNIQ_KEY");
            if (uniq != null) {
                txIndex.put(uniq, index);
            }
            if (msg.getTransactionId() != null) {
                txIndex.put(msg.getTransactionId(), index);
            }
            LocalTransactionState s = state(Events.str(specs.get(index), "transaction", "commit"));
            Map<String, Object> e = Events.event("local_transaction");
            e.put("index", index);
            e.put("uniqKey", uniq);
            e.put("transactionId", msg.getTransactionId());
            e.put("answer", s.name());
            Events.emit(e);
            return s;
        }

        @Override
        public LocalTransactionState checkLocalTransaction(MessageExt msg) {
            Integer index = txIndex.get(String.valueOf(msg.getTransactionId()));
            if (index == null) {
                index = txIndex.get(String.valueOf(msg.getProperty("UNIQ_KEY")));
            }
            LocalTransactionState s = index == null
                ? LocalTransactionState.UNKNOW
                : state(Events.str(specs.get(index), "check", "commit"));
            Map<String, Object> e = Events.event("check");
            e.put("index", index);
            e.putAll(Events.message(msg));
            e.put("transactionId", msg.getTransactionId());
            e.put("answer", s.name());
            Events.emit(e);
            CHECKS.incrementAndGet();
            return s;
        }
    }

    /** Reports each attempt of a send (the client's retries included): where it went and what came back. */
    static final class AttemptHook implements SendMessageHook {
        private final Map<SendMessageContext, Long> started = new IdentityHashMap<>();

        @Override
        public String hookName() {
            return "rmqtwin-attempts";
        }

        @Override
        public void sendMessageBefore(SendMessageContext context) {
            synchronized (started) {
                started.put(context, System.nanoTime());
            }
        }

        @Override
        public void sendMessageAfter(SendMessageContext context) {
            Long begin;
            synchronized (started) {
                begin = started.remove(context);
            }
            Integer index;
            synchronized (INDEX) {
                index = INDEX.get(context.getMessage());
            }
            Map<String, Object> e = Events.event("attempt");
            e.put("index", index);
            e.put("brokerName", context.getMq() == null ? null : context.getMq().getBrokerName());
            e.put("queueId", context.getMq() == null ? null : context.getMq().getQueueId());
            e.put("brokerAddr", context.getBrokerAddr());
            String outcome;
            Exception ex = context.getException();
            if (ex instanceof MQBrokerException) {
                outcome = "code " + ((MQBrokerException) ex).getResponseCode();
            } else if (ex != null) {
                outcome = ex.getClass().getSimpleName();
            } else if (context.getSendResult() != null) {
                outcome = context.getSendResult().getSendStatus().name();
            } else {
                outcome = "none";
            }
            e.put("outcome", outcome);
            e.put("ts", System.currentTimeMillis());
            if (begin != null) {
                e.put("latencyMs", (System.nanoTime() - begin) / 1_000_000);
            }
            synchronized (OUTCOMES) {
                OUTCOMES.add(e.get("brokerName") + " " + outcome);
            }
            Events.emit(e);
        }
    }
}
