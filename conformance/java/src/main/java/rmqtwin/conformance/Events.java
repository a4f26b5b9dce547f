package rmqtwin.conformance;

import com.google.gson.Gson;
import com.google.gson.GsonBuilder;
import com.google.gson.JsonArray;
import com.google.gson.JsonElement;
import com.google.gson.JsonObject;
import com.google.gson.JsonParser;
import java.io.PrintStream;
import java.nio.charset.CharacterCodingException;
import java.nio.charset.CodingErrorAction;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.ArrayList;
import java.util.Base64;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import org.apache.rocketmq.acl.common.AclClientRPCHook;
import org.apache.rocketmq.acl.common.SessionCredentials;
import org.apache.rocketmq.client.ClientConfig;
import org.apache.rocketmq.client.exception.MQBrokerException;
import org.apache.rocketmq.client.exception.MQClientException;
import org.apache.rocketmq.client.producer.SendResult;
import org.apache.rocketmq.common.MQVersion;
import org.apache.rocketmq.common.message.MessageExt;
import org.apache.rocketmq.remoting.RPCHook;

/**
 * The JSON-lines contract shared by every driver: the spec comes in as the first argument (inline
 * JSON or {@code @file}), each event goes out as one JSON object per stdout line, written whole
 * under a lock so lines from callback threads never interleave.
 */
final class Events {
    private static final Gson GSON = new GsonBuilder().disableHtmlEscaping().serializeNulls().create();
    private static final PrintStream OUT = System.out;
    /** Bodies up to this many bytes are echoed in full; longer ones by prefix, length and hash. */
    static final int BODY_ECHO_LIMIT = 4096;

    private Events() {
    }

    static JsonObject spec(String[] args) throws Exception {
        if (args.length < 1) {
            throw new IllegalArgumentException("usage: <driver> '<json spec>' | @spec.json");
        }
        String text = args[0].startsWith("@") ? Files.readString(Path.of(args[0].substring(1))) : args[0];
        return JsonParser.parseString(text).getAsJsonObject();
    }

    /** The body of a driver: everything it does with the client, given the parsed spec. */
    interface Body {
        void run(JsonObject spec) throws Exception;
    }

    /**
     * Runs a driver and exits the JVM: 0 after a normal run, 2 after a fatal error (reported as a
     * "fatal" event and a summary) so client threads left behind never keep the process alive.
     */
    static void run(String driver, String[] args, Body body) {
        long start = System.nanoTime();
        int status = 0;
        try {
            JsonObject spec = spec(args);
            setSystemProperties(spec);
            body.run(spec);
        } catch (Throwable t) {
            Map<String, Object> e = event("fatal");
            putError(e, t);
            emit(e);
            Map<String, Object> s = summary(driver, start);
            s.put("fatal", true);
            emit(s);
            t.printStackTrace();
            status = 2;
        }
        System.out.flush();
        System.exit(status);
    }

    /**
     * Sets the spec's "systemProperties" (e.g. {"tls.enable": "true"}) before any client class reads
     * them: RocketMQ takes settings such as TLS from system properties in static initialisers.
     */
    static void setSystemProperties(JsonObject spec) {
        JsonElement props = spec.get("systemProperties");
        if (props != null && props.isJsonObject()) {
            for (Map.Entry<String, JsonElement> e : props.getAsJsonObject().entrySet()) {
                System.setProperty(e.getKey(), e.getValue().getAsString());
            }
        }
    }

    /**
     * The spec's "acl" ({"accessKey": ..., "secretKey": ...}) as the AclClientRPCHook a client
     * signs its requests with for a broker running ACL 1.0 (plain_acl.yml); null without one.
     */
    static RPCHook rpcHook(JsonObject spec) {
        JsonElement acl = spec.get("acl");
        if (acl == null || !acl.isJsonObject()) {
            return null;
        }
        JsonObject o = acl.getAsJsonObject();
        return new AclClientRPCHook(new SessionCredentials(required(o, "accessKey"), required(o, "secretKey")));
    }

    /** A client call that may fail on a connection hiccup. */
    interface Action {
        void run() throws Exception;
    }

    /**
     * Runs a set-up call up to {@code attempts} times, a second apart, reporting each failure as a
     * "retry" event. Only for set-up steps: under heavy machine load the 5.x client now and then
     * fails the first request on a fresh connection (RemotingSendRequestException).
     */
    static void retrying(String what, int attempts, Action action) throws Exception {
        for (int attempt = 1; ; attempt++) {
            try {
                action.run();
                return;
            } catch (Exception ex) {
                if (attempt >= attempts || !isTransportFailure(ex)) {
                    throw ex;
                }
                Map<String, Object> e = error(ex);
                e.put("event", "retry");
                e.put("what", what);
                e.put("attempt", attempt);
                emit(e);
                Thread.sleep(1000);
            }
        }
    }

    /**
     * True when the failure is the transport's (a request that could not be written, a connect
     * that failed, an answer that did not come in time), not an answer from a server.
     */
    static boolean isTransportFailure(Throwable t) {
        for (Throwable c = t; c != null; c = c.getCause() == c ? null : c.getCause()) {
            String name = c.getClass().getSimpleName();
            if (name.equals("RemotingSendRequestException") || name.equals("RemotingConnectException")
                || name.equals("RemotingTimeoutException")) {
                return true;
            }
        }
        return false;
    }

    static void emit(Map<String, Object> event) {
        String line = GSON.toJson(event);
        synchronized (OUT) {
            OUT.println(line);
            OUT.flush();
        }
    }

    static Map<String, Object> event(String kind) {
        Map<String, Object> e = new LinkedHashMap<>();
        e.put("event", kind);
        return e;
    }

    static String clientVersion() {
        return MQVersion.getVersionDesc(MQVersion.CURRENT_VERSION);
    }

    static Map<String, Object> error(Throwable t) {
        Map<String, Object> e = event("error");
        putError(e, t);
        return e;
    }

    static void putError(Map<String, Object> e, Throwable t) {
        Throwable cause = t;
        Integer code = null;
        if (t instanceof MQClientException) {
            code = ((MQClientException) t).getResponseCode();
            // Client wrappers hide the broker's answer in the cause chain.
            if (t.getCause() instanceof MQBrokerException) {
                cause = t.getCause();
            }
        }
        if (cause instanceof MQBrokerException) {
            code = ((MQBrokerException) cause).getResponseCode();
            e.put("remark", ((MQBrokerException) cause).getErrorMessage());
        }
        e.put("exception", t.getClass().getName());
        if (cause != t) {
            e.put("cause", cause.getClass().getName());
        }
        e.put("responseCode", code);
        e.put("message", String.valueOf(t.getMessage()));
        // The whole chain: a timeout or a lost connection hides behind the client's wrappers.
        List<String> causes = new ArrayList<>();
        for (Throwable c = t.getCause(); c != null && causes.size() < 8; c = c.getCause() == c ? null : c.getCause()) {
            causes.add(c.getClass().getName());
        }
        e.put("causes", causes);
    }

    static void putSendResult(Map<String, Object> e, SendResult r) {
        e.put("status", r.getSendStatus().name());
        e.put("msgId", r.getMsgId());
        e.put("offsetMsgId", r.getOffsetMsgId());
        e.put("topic", r.getMessageQueue().getTopic());
        e.put("brokerName", r.getMessageQueue().getBrokerName());
        e.put("queueId", r.getMessageQueue().getQueueId());
        e.put("queueOffset", r.getQueueOffset());
        e.put("transactionId", r.getTransactionId());
        e.put("regionId", r.getRegionId());
    }

    static Map<String, Object> message(MessageExt m) {
        Map<String, Object> e = new LinkedHashMap<>();
        // For a consumed message getMsgId() is the client unique id (UNIQ_KEY) when there is one.
        e.put("msgId", m.getMsgId());
        e.put("uniqKey", m.getProperty("UNIQ_KEY"));
        try {
            e.put("offsetMsgId", (String) m.getClass().getMethod("getOffsetMsgId").invoke(m));
        } catch (ReflectiveOperationException ignored) {
            e.put("offsetMsgId", null);
        }
        e.put("topic", m.getTopic());
        e.put("brokerName", m.getBrokerName());
        e.put("queueId", m.getQueueId());
        e.put("queueOffset", m.getQueueOffset());
        e.put("commitLogOffset", m.getCommitLogOffset());
        e.put("tags", m.getTags());
        e.put("keys", m.getKeys());
        e.put("properties", new TreeMap<>(m.getProperties()));
        e.put("sysFlag", m.getSysFlag());
        e.put("reconsumeTimes", m.getReconsumeTimes());
        e.put("bornTimestamp", m.getBornTimestamp());
        e.put("storeTimestamp", m.getStoreTimestamp());
        e.put("bornHost", String.valueOf(m.getBornHost()));
        e.put("storeHost", String.valueOf(m.getStoreHost()));
        e.put("storeSize", m.getStoreSize());
        e.put("bodyCRC", m.getBodyCRC());
        putBody(e, m.getBody());
        return e;
    }

    static void putBody(Map<String, Object> e, byte[] body) {
        if (body == null) {
            e.put("bodyLen", null);
            return;
        }
        e.put("bodyLen", body.length);
        e.put("bodySha256", sha256(body));
        String text = utf8(body);
        if (body.length <= BODY_ECHO_LIMIT) {
            if (text != null) {
                e.put("body", text);
            } else {
                e.put("bodyBase64", Base64.getEncoder().encodeToString(body));
            }
        } else {
            byte[] prefix = java.util.Arrays.copyOf(body, 64);
            e.put("bodyPrefixBase64", Base64.getEncoder().encodeToString(prefix));
        }
    }

    static String utf8(byte[] body) {
        try {
            return StandardCharsets.UTF_8.newDecoder()
                .onMalformedInput(CodingErrorAction.REPORT)
                .onUnmappableCharacter(CodingErrorAction.REPORT)
                .decode(java.nio.ByteBuffer.wrap(body)).toString();
        } catch (CharacterCodingException ex) {
            return null;
        }
    }

    static String sha256(byte[] data) {
        try {
            byte[] d = MessageDigest.getInstance("SHA-256").digest(data);
            StringBuilder sb = new StringBuilder(d.length * 2);
            for (byte b : d) {
                sb.append(String.format("%02x", b));
            }
            return sb.toString();
        } catch (NoSuchAlgorithmException ex) {
            throw new IllegalStateException(ex);
        }
    }

    /**
     * Calls an enum setter by the constant's name. Some enums (MessageModel) moved packages
     * between 4.9 and 5.x; going through the setter's parameter type keeps one source for both.
     */
    @SuppressWarnings({"unchecked", "rawtypes"})
    static void setEnum(Object target, String setter, String name) throws ReflectiveOperationException {
        for (java.lang.reflect.Method m : target.getClass().getMethods()) {
            if (m.getName().equals(setter) && m.getParameterCount() == 1 && m.getParameterTypes()[0].isEnum()) {
                m.invoke(target, Enum.valueOf((Class) m.getParameterTypes()[0], name));
                return;
            }
        }
        throw new NoSuchMethodException(setter);
    }

    // ---- spec accessors -------------------------------------------------------------------

    static String str(JsonObject o, String key, String dflt) {
        JsonElement v = o.get(key);
        return v == null || v.isJsonNull() ? dflt : v.getAsString();
    }

    static long num(JsonObject o, String key, long dflt) {
        JsonElement v = o.get(key);
        return v == null || v.isJsonNull() ? dflt : v.getAsLong();
    }

    static boolean bool(JsonObject o, String key, boolean dflt) {
        JsonElement v = o.get(key);
        return v == null || v.isJsonNull() ? dflt : v.getAsBoolean();
    }

    static List<String> strings(JsonObject o, String key) {
        List<String> out = new ArrayList<>();
        JsonElement v = o.get(key);
        if (v == null || v.isJsonNull()) {
            return out;
        }
        if (v.isJsonArray()) {
            for (JsonElement x : v.getAsJsonArray()) {
                out.add(x.getAsString());
            }
        } else {
            out.add(v.getAsString());
        }
        return out;
    }

    static JsonArray array(JsonObject o, String key) {
        JsonElement v = o.get(key);
        return v == null || v.isJsonNull() ? new JsonArray() : v.getAsJsonArray();
    }

    static String required(JsonObject o, String key) {
        String v = str(o, key, null);
        if (v == null) {
            throw new IllegalArgumentException("spec needs \"" + key + "\"");
        }
        return v;
    }

    /** A unique instance name keeps drivers started in parallel from sharing one client factory. */
    /**
     * Points a client at its name server under an instance name. Its own API calls (route look-ups,
     * heartbeats, unregistering) wait up to {@code apiTimeoutMs} (15 s unless the spec says): the drivers
     * share two cores with the brokers under test, where the client's 3 s default can run out on a busy
     * CPU, which is not an answer of the broker.
     */
    static void connect(ClientConfig client, String namesrv, String instance, JsonObject spec) {
        client.setNamesrvAddr(namesrv);
        client.setInstanceName(instance);
        client.setMqClientApiTimeout((int) num(spec, "apiTimeoutMs", 15_000));
    }

    static String instanceName(String driver) {
        return "rmqtwin-" + driver + "-" + ProcessHandle.current().pid();
    }

    static Map<String, Object> summary(String driver, long startNanos) {
        Map<String, Object> e = event("summary");
        e.put("driver", driver);
        e.put("clientVersion", clientVersion());
        e.put("elapsedMs", (System.nanoTime() - startNanos) / 1_000_000);
        return e;
    }
}
