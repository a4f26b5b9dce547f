package rmqtwin.conformance;

import com.google.gson.JsonObject;
import java.nio.charset.StandardCharsets;
import java.util.Map;
import java.util.concurrent.atomic.AtomicInteger;
import org.apache.rocketmq.client.consumer.DefaultMQPushConsumer;
import org.apache.rocketmq.client.consumer.listener.ConsumeConcurrentlyStatus;
import org.apache.rocketmq.client.consumer.listener.MessageListenerConcurrently;
import org.apache.rocketmq.client.producer.DefaultMQProducer;
import org.apache.rocketmq.client.producer.SendResult;
import org.apache.rocketmq.client.utils.MessageUtil;
import org.apache.rocketmq.common.consumer.ConsumeFromWhere;
import org.apache.rocketmq.common.message.Message;
import org.apache.rocketmq.common.message.MessageExt;

/**
 * Request-reply with the real client: a requester ({@code DefaultMQProducer.request}) and, unless
 * {@code noReplier}, a replier (a push consumer answering each request with
 * {@code MessageUtil.createReplyMessage}, sent by its own producer as SEND_REPLY_MESSAGE).
 *
 * <p>Spec: namesrv, topic, group (the replier's), count, bodyPrefix, requestTimeoutMs, noReplier.
 * Events: "replied" (the replier's send of a reply: the request's body, the reply's topic and send
 * status), "reply" (what request() returned: index, body, topic) or "error" (it threw).
 */
public final class RequestReply {
    private RequestReply() {
    }

    public static void main(String[] args) {
        Events.run("request_reply", args, RequestReply::run);
    }

    static void run(JsonObject spec) throws Exception {
        long start = System.nanoTime();
        String namesrv = Events.required(spec, "namesrv");
        String topic = Events.required(spec, "topic");
        long count = Events.num(spec, "count", 3);
        long timeoutMs = Events.num(spec, "requestTimeoutMs", 10_000);
        String prefix = Events.str(spec, "bodyPrefix", "request-");

        AtomicInteger replied = new AtomicInteger();
        DefaultMQPushConsumer replier = null;
        DefaultMQProducer replyProducer = null;
        if (!Events.bool(spec, "noReplier", false)) {
            replyProducer = new DefaultMQProducer(Events.str(spec, "group", "rmqtwin_replier") + "_P");
            Events.connect(replyProducer, namesrv, Events.instanceName("replyProducer"), spec);
            replyProducer.start();
            replier = new DefaultMQPushConsumer(Events.str(spec, "group", "rmqtwin_replier"));
            Events.connect(replier, namesrv, Events.instanceName("replier"), spec);
            replier.setConsumeFromWhere(ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET);
            replier.subscribe(topic, "*");
            DefaultMQProducer sender = replyProducer;
            replier.registerMessageListener((MessageListenerConcurrently) (msgs, ctx) -> {
                for (MessageExt m : msgs) {
                    String body = Events.utf8(m.getBody());
                    Map<String, Object> e = Events.event("replied");
                    e.put("body", body);
                    try {
                        Message reply = MessageUtil.createReplyMessage(m, ("reply-" + body).getBytes(StandardCharsets.UTF_8));
                        SendResult sent = sender.send(reply, 10_000);
                        e.put("replyTopic", reply.getTopic());
                        e.put("status", sent.getSendStatus().name());
                    } catch (Exception ex) {
                        Events.putError(e, ex);
                    }
                    Events.emit(e);
                    replied.incrementAndGet();
                }
                return ConsumeConcurrentlyStatus.CONSUME_SUCCESS;
            });
            replier.start();
        }

        DefaultMQProducer requester = new DefaultMQProducer(Events.str(spec, "requesterGroup", "rmqtwin_requester"));
        Events.connect(requester, namesrv, Events.instanceName("requester"), spec);
        requester.start();
        Map<String, Object> started = Events.event("started");
        started.put("driver", "request_reply");
        started.put("clientVersion", Events.clientVersion());
        Events.emit(started);

        int ok = 0;
        int failed = 0;
        for (int i = 0; i < count; i++) {
            String body = prefix + i;
            Map<String, Object> e;
            try {
                // The replier may take its queues only after the first request was sent: it then
                // consumes it from the first offset, in time for a longer first wait.
                long wait = i == 0 && replier != null ? Math.max(timeoutMs, 30_000) : timeoutMs;
                Message reply = requester.request(new Message(topic, body.getBytes(StandardCharsets.UTF_8)), wait);
                e = Events.event("reply");
                e.put("body", Events.utf8(reply.getBody()));
                e.put("topic", reply.getTopic());
                ok++;
            } catch (Exception ex) {
                e = Events.error(ex);
                failed++;
            }
            e.put("index", i);
            e.put("request", body);
            Events.emit(e);
        }
        requester.shutdown();
        if (replier != null) {
            // A reply reaches the requester before the replier's send() returns: shut the replier down
            // only once it has reported each reply, or its send is interrupted (seen under load).
            long deadline = System.currentTimeMillis() + timeoutMs;
            while (replied.get() < ok && System.currentTimeMillis() < deadline) {
                Thread.sleep(20);
            }
            replier.shutdown();
            replyProducer.shutdown();
        }
        Map<String, Object> summary = Events.summary("request_reply", start);
        summary.put("sent", ok + failed);
        summary.put("received", ok);
        summary.put("errors", failed);
        Events.emit(summary);
    }
}
