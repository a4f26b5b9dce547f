package rmqtwin.conformance;

import com.google.gson.JsonObject;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.apache.rocketmq.client.consumer.DefaultLitePullConsumer;
import org.apache.rocketmq.client.consumer.MessageSelector;
import org.apache.rocketmq.common.consumer.ConsumeFromWhere;
import org.apache.rocketmq.common.message.MessageExt;
import org.apache.rocketmq.common.message.MessageQueue;

/**
 * Polls with the real lite pull consumer, subscribed (rebalanced by the group) or assigned
 * (queues chosen here), until {@code expect} messages arrived or {@code timeoutMs} passed.
 *
 * <p>Spec: namesrv, group, topic, mode (subscribe|assign), expression or sql, queues (queue ids
 * to assign; default all), seek (begin|end|none; assign mode, default begin), consumeFromWhere,
 * broadcasting, expect, timeoutMs, pollTimeoutMs, pullBatchSize, autoCommit, acl {accessKey,
 * secretKey} (sign with AclClientRPCHook).
 */
public final class LitePullConsumer {
    private LitePullConsumer() {
    }

    public static void main(String[] args) {
        Events.run("lite_pull", args, LitePullConsumer::run);
    }

    static void run(JsonObject spec) throws Exception {
        long start = System.nanoTime();
        String topic = Events.required(spec, "topic");
        String mode = Events.str(spec, "mode", "subscribe");
        DefaultLitePullConsumer consumer = new DefaultLitePullConsumer(Events.required(spec, "group"), Events.rpcHook(spec));
        Events.connect(consumer, Events.required(spec, "namesrv"), Events.instanceName("litepull"), spec);
        consumer.setConsumeFromWhere(
            ConsumeFromWhere.valueOf(Events.str(spec, "consumeFromWhere", "CONSUME_FROM_FIRST_OFFSET")));
        Events.setEnum(consumer, "setMessageModel", Events.bool(spec, "broadcasting", false)
            ? "BROADCASTING" : "CLUSTERING");
        consumer.setPullBatchSize((int) Events.num(spec, "pullBatchSize", 32));
        consumer.setAutoCommit(Events.bool(spec, "autoCommit", true));
        consumer.setPollTimeoutMillis(Events.num(spec, "pollTimeoutMs", 1000));
        List<MessageQueue> assigned = new ArrayList<>();
        if ("subscribe".equals(mode)) {
            if (spec.has("sql")) {
                consumer.subscribe(topic, MessageSelector.bySql(Events.str(spec, "sql", "TRUE")));
            } else {
                consumer.subscribe(topic, Events.str(spec, "expression", "*"));
            }
            consumer.start();
        } else if ("assign".equals(mode)) {
            consumer.start();
            Collection<MessageQueue> all = consumer.fetchMessageQueues(topic);
            Set<Long> wanted = new HashSet<>();
            for (String q : Events.strings(spec, "queues")) {
                wanted.add(Long.parseLong(q));
            }
            for (MessageQueue mq : all) {
                if (wanted.isEmpty() || wanted.contains((long) mq.getQueueId())) {
                    assigned.add(mq);
                }
            }
            consumer.assign(assigned);
            String seek = Events.str(spec, "seek", "begin");
            int attempts = (int) Events.num(spec, "startAttempts", 3);
            for (MessageQueue mq : assigned) {
                if ("begin".equals(seek)) {
                    Events.retrying("seekToBegin", attempts, () -> consumer.seekToBegin(mq));
                } else if ("end".equals(seek)) {
                    Events.retrying("seekToEnd", attempts, () -> consumer.seekToEnd(mq));
                }
            }
        } else {
            throw new IllegalArgumentException("mode must be subscribe or assign: " + mode);
        }
        Map<String, Object> started = Events.event("started");
        started.put("driver", "lite_pull");
        started.put("clientVersion", Events.clientVersion());
        started.put("mode", mode);
        List<String> names = new ArrayList<>();
        for (MessageQueue mq : assigned) {
            names.add(mq.getBrokerName() + ":" + mq.getQueueId());
        }
        started.put("assigned", names);
        Events.emit(started);

        long expect = Events.num(spec, "expect", 0);
        long deadline = System.currentTimeMillis() + Events.num(spec, "timeoutMs", 90_000);
        int received = 0;
        while ((expect <= 0 || received < expect) && System.currentTimeMillis() < deadline) {
            for (MessageExt m : consumer.poll(Math.max(10, Math.min(1000, deadline - System.currentTimeMillis())))) {
                Map<String, Object> e = Events.event("received");
                e.putAll(Events.message(m));
                Events.emit(e);
                received++;
            }
        }
        if (consumer.isAutoCommit()) {
            consumer.commitSync();
        }
        consumer.shutdown();
        Map<String, Object> summary = Events.summary("lite_pull", start);
        summary.put("mode", mode);
        summary.put("received", received);
        summary.put("expected", expect);
        summary.put("timedOut", expect > 0 && received < expect);
        Events.emit(summary);
    }
}
