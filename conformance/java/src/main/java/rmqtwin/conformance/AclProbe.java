package rmqtwin.conformance;

import com.google.gson.JsonElement;
import com.google.gson.JsonObject;
import java.nio.charset.StandardCharsets;
import java.util.Map;
import java.util.Set;
import org.apache.rocketmq.client.consumer.DefaultMQPullConsumer;
import org.apache.rocketmq.client.consumer.PullResult;
import org.apache.rocketmq.client.producer.DefaultMQProducer;
import org.apache.rocketmq.client.producer.SendResult;
import org.apache.rocketmq.common.TopicConfig;
import org.apache.rocketmq.common.message.Message;
import org.apache.rocketmq.common.message.MessageQueue;
import org.apache.rocketmq.remoting.RPCHook;
import org.apache.rocketmq.tools.admin.DefaultMQAdminExt;

/**
 * Runs several ACL cases, each with a client of its own credentials, in one JVM and reports one
 * "case" event per case: ok, or the error (exception, responseCode, remark) the client saw.
 *
 * <p>Spec: namesrv, brokerAddr, cases (list of {name, action, acl {accessKey, secretKey} or none,
 * topic, group, queueNums}). Actions: "updateTopic" (what mqadmin updateTopic -b does:
 * DefaultMQAdminExt.createAndUpdateTopicConfig), "send" (one sync send, no retry), "pull" (a
 * DefaultMQPullConsumer pulls every queue of the topic from offset 0; reports how many messages
 * it found). A case that fails in the transport (no answer in time) is run again, up to 3 times.
 */
public final class AclProbe {
    private AclProbe() {
    }

    public static void main(String[] args) {
        Events.run("acl_probe", args, AclProbe::run);
    }

    static void run(JsonObject spec) throws Exception {
        long start = System.nanoTime();
        String namesrv = Events.required(spec, "namesrv");
        int index = 0;
        for (JsonElement element : Events.array(spec, "cases")) {
            JsonObject c = element.getAsJsonObject();
            Map<String, Object> e = Events.event("case");
            e.put("name", Events.str(c, "name", "case" + index));
            e.put("action", Events.required(c, "action"));
            final int number = index;
            try {
                // A fresh broker on a loaded machine may not answer a first request in time: such a
                // transport failure is tried again (as a "retry" event), an answer never is.
                Events.retrying(String.valueOf(e.get("name")), 3,
                    () -> runCase(namesrv, Events.str(spec, "brokerAddr", null), c, number, e));
                e.put("ok", true);
            } catch (Exception ex) {
                e.put("ok", false);
                Events.putError(e, ex);
            }
            Events.emit(e);
            index++;
        }
        Events.emit(Events.summary("acl_probe", start));
    }

    static void runCase(String namesrv, String brokerAddr, JsonObject c, int index, Map<String, Object> e)
        throws Exception {
        RPCHook hook = Events.rpcHook(c);
        String instance = Events.instanceName("acl" + index) + "-" + System.nanoTime();
        String topic = Events.required(c, "topic");
        switch (Events.required(c, "action")) {
            case "updateTopic": {
                DefaultMQAdminExt admin = new DefaultMQAdminExt(hook);
                Events.connect(admin, namesrv, instance, c);
                admin.start();
                try {
                    TopicConfig config = new TopicConfig(topic);
                    int queues = (int) Events.num(c, "queueNums", 4);
                    config.setReadQueueNums(queues);
                    config.setWriteQueueNums(queues);
                    admin.createAndUpdateTopicConfig(brokerAddr, config);
                } finally {
                    admin.shutdown();
                }
                break;
            }
            case "send": {
                DefaultMQProducer producer = new DefaultMQProducer(Events.str(c, "group", "rmqtwin_acl_producer"), hook);
                Events.connect(producer, namesrv, instance, c);
                producer.setRetryTimesWhenSendFailed(0);
                producer.setSendMsgTimeout(5000);
                producer.start();
                try {
                    Message m = new Message(topic, "acl", ("acl case " + index).getBytes(StandardCharsets.UTF_8));
                    SendResult r = producer.send(m);
                    Events.putSendResult(e, r);
                } finally {
                    producer.shutdown();
                }
                break;
            }
            case "pull": {
                DefaultMQPullConsumer consumer = new DefaultMQPullConsumer(Events.required(c, "group"), hook);
                Events.connect(consumer, namesrv, instance, c);
                consumer.start();
                try {
                    Set<MessageQueue> queues = consumer.fetchSubscribeMessageQueues(topic);
                    int found = 0;
                    for (MessageQueue mq : queues) {
                        PullResult r = consumer.pull(mq, "*", 0, 32);
                        found += r.getMsgFoundList() == null ? 0 : r.getMsgFoundList().size();
                    }
                    e.put("found", found);
                } finally {
                    consumer.shutdown();
                }
                break;
            }
            default:
                throw new IllegalArgumentException("unknown action " + Events.required(c, "action"));
        }
    }
}
