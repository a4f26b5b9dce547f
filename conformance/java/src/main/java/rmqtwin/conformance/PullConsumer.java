package rmqtwin.conformance;

import com.google.gson.JsonElement;
import com.google.gson.JsonObject;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.apache.rocketmq.client.consumer.DefaultMQPullConsumer;
import org.apache.rocketmq.client.consumer.PullResult;
import org.apache.rocketmq.client.consumer.store.RemoteBrokerOffsetStore;
import org.apache.rocketmq.common.message.MessageExt;
import org.apache.rocketmq.common.message.MessageQueue;

/**
 * The classic pull consumer ({@code DefaultMQPullConsumer}): the application picks the queue and the
 * offset of every pull and keeps the offsets itself, so each pull's answer is reported as it came.
 *
 * <p>Spec: namesrv, group, topic, pulls (list of {queue, offset, maxNums, expression}; offset a number
 * or "next" (the last pull's nextBeginOffset on that queue), "min", "max" or "committed" (the group's
 * offset the broker holds)), commit (list of {queue, offset}: updateConsumeOffset, stored on the broker
 * at once with a synchronous UPDATE_CONSUMER_OFFSET), acl. One "pull" event per pull: index, queueId, offset, status,
 * nextBeginOffset, minOffset, maxOffset and the bodies found.
 */
public final class PullConsumer {
    private PullConsumer() {
    }

    public static void main(String[] args) {
        Events.run("pull_consumer", args, PullConsumer::run);
    }

    static void run(JsonObject spec) throws Exception {
        long start = System.nanoTime();
        String topic = Events.required(spec, "topic");
        DefaultMQPullConsumer consumer = new DefaultMQPullConsumer(Events.required(spec, "group"), Events.rpcHook(spec));
        Events.connect(consumer, Events.required(spec, "namesrv"), Events.instanceName("pull"), spec);
        consumer.start();
        Map<String, Object> started = Events.event("started");
        started.put("driver", "pull_consumer");
        started.put("clientVersion", Events.clientVersion());
        Events.emit(started);

        int attempts = (int) Events.num(spec, "startAttempts", 3);
        Map<Integer, MessageQueue> queues = new HashMap<>();
        Events.retrying("route", attempts, () -> {
            for (MessageQueue mq : consumer.fetchSubscribeMessageQueues(topic)) {
                queues.put(mq.getQueueId(), mq);
            }
        });
        Map<Integer, Long> next = new HashMap<>();
        int index = 0;
        int found = 0;
        for (JsonElement element : Events.array(spec, "pulls")) {
            JsonObject pull = element.getAsJsonObject();
            int queueId = (int) Events.num(pull, "queue", 0);
            MessageQueue mq = queues.get(queueId);
            if (mq == null) {
                throw new IllegalArgumentException("no queue " + queueId + " in the route of " + topic);
            }
            long offset = offset(consumer, mq, pull, next);
            Map<String, Object> e = Events.event("pull");
            e.put("index", index++);
            e.put("queueId", queueId);
            e.put("offset", offset);
            try {
                PullResult r = consumer.pull(mq, Events.str(pull, "expression", "*"), offset,
                    (int) Events.num(pull, "maxNums", 32));
                next.put(queueId, r.getNextBeginOffset());
                e.put("status", r.getPullStatus().name());
                e.put("nextBeginOffset", r.getNextBeginOffset());
                e.put("minOffset", r.getMinOffset());
                e.put("maxOffset", r.getMaxOffset());
                List<Object> bodies = new ArrayList<>();
                List<MessageExt> msgs = r.getMsgFoundList();
                if (msgs != null) {
                    for (MessageExt m : msgs) {
                        bodies.add(Events.utf8(m.getBody()));
                        found++;
                    }
                }
                e.put("bodies", bodies);
            } catch (Exception ex) {
                e.putAll(Events.error(ex));
                e.put("event", "pull");
            }
            Events.emit(e);
        }
        if (spec.has("commit")) {
            for (JsonElement element : Events.array(spec, "commit")) {
                JsonObject c = element.getAsJsonObject();
                MessageQueue mq = queues.get((int) Events.num(c, "queue", 0));
                long offset = Events.num(c, "offset", 0);
                consumer.updateConsumeOffset(mq, offset);
                // Stored now, synchronously: the consumer's own persist at shutdown covers only the
                // queues its rebalance has taken by then (a race with the client's rebalance timer).
                ((RemoteBrokerOffsetStore) consumer.getDefaultMQPullConsumerImpl().getOffsetStore())
                    .updateConsumeOffsetToBroker(mq, offset, false);
            }
        }
        consumer.shutdown();
        Map<String, Object> summary = Events.summary("pull_consumer", start);
        summary.put("pulls", index);
        summary.put("received", found);
        Events.emit(summary);
    }

    static long offset(DefaultMQPullConsumer consumer, MessageQueue mq, JsonObject pull, Map<Integer, Long> next)
        throws Exception {
        JsonElement value = pull.get("offset");
        if (value == null) {
            return 0;
        }
        if (value.getAsJsonPrimitive().isNumber()) {
            return value.getAsLong();
        }
        switch (value.getAsString()) {
            case "next":
                return next.getOrDefault(mq.getQueueId(), 0L);
            case "min":
                return consumer.minOffset(mq);
            case "max":
                return consumer.maxOffset(mq);
            case "committed":
                return consumer.fetchConsumeOffset(mq, true);
            default:
                throw new IllegalArgumentException("offset: a number, next, min, max or committed");
        }
    }
}
