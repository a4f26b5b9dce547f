package rmqtwin.conformance;

import com.google.gson.JsonElement;
import com.google.gson.JsonObject;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeSet;
import java.util.concurrent.ConcurrentHashMap;
import org.apache.rocketmq.client.consumer.AllocateMessageQueueStrategy;
import org.apache.rocketmq.client.consumer.DefaultMQPushConsumer;
import org.apache.rocketmq.client.consumer.listener.ConsumeConcurrentlyStatus;
import org.apache.rocketmq.client.consumer.listener.MessageListenerConcurrently;
import org.apache.rocketmq.client.consumer.rebalance.AllocateMessageQueueAveragely;
import org.apache.rocketmq.client.consumer.rebalance.AllocateMessageQueueAveragelyByCircle;
import org.apache.rocketmq.client.consumer.rebalance.AllocateMessageQueueByConfig;
import org.apache.rocketmq.client.consumer.rebalance.AllocateMessageQueueConsistentHash;
import org.apache.rocketmq.common.consumer.ConsumeFromWhere;
import org.apache.rocketmq.common.message.MessageQueue;

/**
 * A consumer group joined by {@code consumers} push consumers in this JVM (instance names c0, c1,
 * ...), each allocating queues with one strategy; reports each consumer's queues once the group is
 * settled, then again after the consumers in {@code leave} shut down.
 *
 * <p>The allocation is the client's arithmetic, but what it is done over comes from the brokers: the
 * group's consumer list (GET_CONSUMER_LIST_BY_GROUP, refreshed when the broker notifies the group's
 * clients of a join or leave) and the topic's queues from the route.
 *
 * <p>Spec: namesrv, group, topic, consumers, strategy (averagely|circle|consistentHash|config),
 * config (for "config": per consumer the queue ids it is given), leave (consumer numbers), timeoutMs,
 * settleMs (how long an allocation must stay unchanged). Events: "allocation" {phase (joined|left),
 * consumer, queues, consumerIds (the instance names of the consumers it allocated among, as the broker listed them)}, "unsettled" on a timeout.
 */
public final class Rebalance {
    private Rebalance() {
    }

    public static void main(String[] args) {
        Events.run("rebalance", args, Rebalance::run);
    }

    /** What one consumer's strategy last returned, and among which consumers (instance names). */
    record Allocation(List<Integer> queues, List<String> consumerIds) {
    }

    /** Records every allocation a consumer's strategy makes. */
    static final class Recording implements AllocateMessageQueueStrategy {
        private final AllocateMessageQueueStrategy inner;
        private final Map<String, Allocation> last;
        private final String consumer;
        private final String topic;

        Recording(AllocateMessageQueueStrategy inner, Map<String, Allocation> last, String consumer, String topic) {
            this.inner = inner;
            this.last = last;
            this.consumer = consumer;
            this.topic = topic;
        }

        @Override
        public List<MessageQueue> allocate(String group, String currentCID, List<MessageQueue> mqAll, List<String> cidAll) {
            List<MessageQueue> result = inner.allocate(group, currentCID, mqAll, cidAll);
            if (mqAll.isEmpty() || !topic.equals(mqAll.get(0).getTopic())) {
                return result;  // the group's retry topic, rebalanced too
            }
            List<Integer> ids = new ArrayList<>();
            for (MessageQueue mq : result) {
                ids.add(mq.getQueueId());
            }
            ids.sort(null);
            List<String> names = new ArrayList<>();
            for (String cid : cidAll) {
                names.add(cid.substring(cid.indexOf('@') + 1));  // ip@c0: the machine's ip is not compared
            }
            last.put(consumer, new Allocation(ids, names));
            return result;
        }

        @Override
        public String getName() {
            return inner.getName();
        }
    }

    static AllocateMessageQueueStrategy strategy(JsonObject spec, int index, String topic) {
        String name = Events.str(spec, "strategy", "averagely");
        switch (name) {
            case "averagely":
                return new AllocateMessageQueueAveragely();
            case "circle":
                return new AllocateMessageQueueAveragelyByCircle();
            case "consistentHash":
                return new AllocateMessageQueueConsistentHash();
            case "config":
                AllocateMessageQueueByConfig byConfig = new AllocateMessageQueueByConfig();
                List<MessageQueue> mine = new ArrayList<>();
                JsonElement given = Events.array(spec, "config").get(index);
                for (JsonElement q : given.getAsJsonArray()) {
                    mine.add(new MessageQueue(topic, Events.str(spec, "brokerName", "broker-a"), q.getAsInt()));
                }
                byConfig.setMessageQueueList(mine);
                return byConfig;
            default:
                throw new IllegalArgumentException("strategy: averagely, circle, consistentHash or config");
        }
    }

    static void run(JsonObject spec) throws Exception {
        long start = System.nanoTime();
        String topic = Events.required(spec, "topic");
        int count = (int) Events.num(spec, "consumers", 2);
        Map<String, Allocation> last = new ConcurrentHashMap<>();
        List<DefaultMQPushConsumer> consumers = new ArrayList<>();
        for (int i = 0; i < count; i++) {
            String name = "c" + i;
            DefaultMQPushConsumer c = new DefaultMQPushConsumer(Events.required(spec, "group"), Events.rpcHook(spec),
                new Recording(strategy(spec, i, topic), last, name, topic));
            // The same names in every run: the consistent hash is taken over the client ids.
            Events.connect(c, Events.required(spec, "namesrv"), name, spec);
            c.setConsumeFromWhere(ConsumeFromWhere.CONSUME_FROM_LAST_OFFSET);
            c.subscribe(topic, "*");
            c.registerMessageListener((MessageListenerConcurrently) (msgs, ctx) -> ConsumeConcurrentlyStatus.CONSUME_SUCCESS);
            consumers.add(c);
        }
        for (DefaultMQPushConsumer c : consumers) {
            c.start();
        }
        Map<String, Object> started = Events.event("started");
        started.put("driver", "rebalance");
        started.put("clientVersion", Events.clientVersion());
        Events.emit(started);

        long timeoutMs = Events.num(spec, "timeoutMs", 60_000);
        long settleMs = Events.num(spec, "settleMs", 1_000);
        TreeSet<String> live = new TreeSet<>();
        for (int i = 0; i < count; i++) {
            live.add("c" + i);
        }
        boolean settled = settle("joined", live, last, timeoutMs, settleMs);
        List<Integer> leaving = new ArrayList<>();
        if (spec.has("leave")) {
            for (JsonElement e : Events.array(spec, "leave")) {
                leaving.add(e.getAsInt());
            }
        }
        if (settled && !leaving.isEmpty()) {
            for (int i : leaving) {
                consumers.get(i).shutdown();
                live.remove("c" + i);
                last.remove("c" + i);
            }
            settled = settle("left", live, last, timeoutMs, settleMs);
        }
        for (int i = 0; i < count; i++) {
            if (!leaving.contains(i)) {
                consumers.get(i).shutdown();
            }
        }
        Map<String, Object> summary = Events.summary("rebalance", start);
        summary.put("settled", settled);
        Events.emit(summary);
    }

    /**
     * Waits until every live consumer's last allocation was made among exactly the live consumers
     * and none changed for {@code settleMs}, then reports them; false (and "unsettled") on a timeout.
     */
    static boolean settle(String phase, TreeSet<String> live, Map<String, Allocation> last, long timeoutMs,
        long settleMs) throws InterruptedException {
        long deadline = System.currentTimeMillis() + timeoutMs;
        Map<String, Allocation> seen = null;
        long since = 0;
        while (System.currentTimeMillis() < deadline) {
            Map<String, Allocation> now = new java.util.TreeMap<>(last);
            boolean complete = now.keySet().equals(live);
            for (Allocation a : now.values()) {
                complete &= a.consumerIds().size() == live.size();
            }
            if (!complete) {
                seen = null;
            } else if (!now.equals(seen)) {
                seen = now;
                since = System.currentTimeMillis();
            } else if (System.currentTimeMillis() - since >= settleMs) {
                for (Map.Entry<String, Allocation> e : now.entrySet()) {
                    Map<String, Object> event = Events.event("allocation");
                    event.put("phase", phase);
                    event.put("consumer", e.getKey());
                    event.put("queues", e.getValue().queues());
                    event.put("consumerIds", e.getValue().consumerIds());
                    Events.emit(event);
                }
                return true;
            }
            Thread.sleep(50);
        }
        Map<String, Object> event = Events.event("unsettled");
        event.put("phase", phase);
        event.put("last", String.valueOf(new java.util.TreeMap<>(last)));
        Events.emit(event);
        return false;
    }
}
