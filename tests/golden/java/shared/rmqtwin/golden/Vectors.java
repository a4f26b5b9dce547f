package rmqtwin.golden;

import com.alibaba.fastjson.JSON;
import com.alibaba.fastjson.JSONArray;
import com.alibaba.fastjson.JSONObject;
import com.alibaba.fastjson.serializer.SerializerFeature;
import java.io.IOException;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.lang.reflect.Field;
import java.lang.reflect.Method;
import java.lang.reflect.Modifier;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.apache.rocketmq.common.MQVersion;
import org.apache.rocketmq.common.message.Message;
import org.apache.rocketmq.common.message.MessageDecoder;
import org.apache.rocketmq.common.message.MessageExt;
import org.apache.rocketmq.remoting.CommandCustomHeader;
import org.apache.rocketmq.remoting.protocol.RemotingCommand;
import org.apache.rocketmq.remoting.protocol.RemotingSerializable;
import org.apache.rocketmq.remoting.protocol.SerializeType;

/**
 * The vector manifest both directions share. generate: each vector = exact bytes (hex) plus
 * the fields Java sees in them. verify: Python-encoded bytes are decoded by the Java classes and
 * the fields Java saw (or the exception) are written per vector.
 */
final class Vectors {
    private final List<Map<String, Object>> vectors = new ArrayList<>();
    private final String rocketmqVersion;
    private final int mqVersion;

    Vectors(String rocketmqVersion, int mqVersion) {
        this.rocketmqVersion = rocketmqVersion;
        this.mqVersion = mqVersion;
    }

    /** Sets fields (declared anywhere in the class hierarchy) of a typed header or bean. */
    static <T> T fill(T obj, Object... kv) {
        try {
            for (int i = 0; i < kv.length; i += 2) {
                Field f = findField(obj.getClass(), (String) kv[i]);
                f.setAccessible(true);
                f.set(obj, kv[i + 1]);
            }
        } catch (ReflectiveOperationException e) {
            throw new IllegalArgumentException(e);
        }
        return obj;
    }

    private static Field findField(Class<?> cls, String name) throws NoSuchFieldException {
        for (Class<?> c = cls; c != null; c = c.getSuperclass()) {
            try {
                return c.getDeclaredField(name);
            } catch (NoSuchFieldException e) {
                // keep walking up
            }
        }
        throw new NoSuchFieldException(cls.getName() + "." + name);
    }

    static RemotingCommand request(int code, CommandCustomHeader header, int version, int opaque,
        SerializeType type) {
        RemotingCommand cmd = RemotingCommand.createRequestCommand(code, header);
        cmd.setVersion(version);
        cmd.setOpaque(opaque);
        cmd.setSerializeTypeCurrentRPC(type);
        return cmd;
    }

    /** A command vector: the wire frame and what Java decodes from it (header typed if a class is given). */
    void command(String name, RemotingCommand cmd, Class<? extends CommandCustomHeader> headerClass)
        throws Exception {
        byte[] frame = Wire.encode(cmd);
        RemotingCommand decoded = Wire.decode(frame);
        Map<String, Object> v = new LinkedHashMap<>();
        v.put("name", name + "." + decoded.getSerializeTypeCurrentRPC().name().toLowerCase());
        v.put("kind", "command");
        v.put("hex", Describe.hex(frame));
        v.put("command", Describe.command(decoded));
        v.put("headerClass", headerClass == null ? null : headerClass.getSimpleName());
        v.put("header", headerClass == null ? null : Describe.header(decoded.decodeCommandCustomHeader(headerClass)));
        v.put("headerFields", headerClass == null ? null : Describe.headerFields(headerClass));
        // ROCKETMQ decodes a zero-length ext value as null, and keeps only the last of duplicate keys
        // (FastCodesHeader fields written again from extFields): such frames cannot be re-sent as they are.
        boolean roundTrip = true;
        if (decoded.getExtFields() != null) {
            for (String value : decoded.getExtFields().values()) {
                roundTrip &= value != null;
            }
        }
        roundTrip &= Wire.encode(Wire.decode(frame)).length == frame.length;
        v.put("roundTrip", roundTrip);
        vectors.add(v);
    }

    /** Both serializations of the same command (a fresh command per type: encoding mutates it). */
    interface CommandFactory {
        RemotingCommand make(SerializeType type) throws Exception;
    }

    void commandBoth(String name, CommandFactory factory, Class<? extends CommandCustomHeader> headerClass)
        throws Exception {
        command(name, factory.make(SerializeType.JSON), headerClass);
        command(name, factory.make(SerializeType.ROCKETMQ), headerClass);
    }

    /** One or more stored-message records back to back (a pull/query body is exactly this). */
    void records(String name, List<MessageExt> messages) throws Exception {
        ByteBuffer all = ByteBuffer.allocate(1 << 20);
        for (MessageExt m : messages) {
            all.put(MessageDecoder.encode(m, false));
        }
        all.flip();
        byte[] bytes = new byte[all.remaining()];
        all.get(bytes);
        Map<String, Object> v = new LinkedHashMap<>();
        v.put("name", name);
        v.put("kind", "records");
        v.put("hex", Describe.hex(bytes));
        v.put("messages", decodeRecords(bytes));
        vectors.add(v);
    }

    static List<Object> decodeRecords(byte[] bytes) throws Exception {
        List<Object> out = new ArrayList<>();
        ByteBuffer buf = ByteBuffer.wrap(bytes);
        while (buf.hasRemaining()) {
            int start = buf.position();
            // readBody, no decompression: the record as stored; then the consumer's view.
            MessageExt stored = MessageDecoder.decode(buf, true, false);
            if (stored == null) {
                throw new IllegalStateException("MessageDecoder.decode failed at byte " + start);
            }
            Map<String, Object> d = Describe.message(stored);
            int end = buf.position();
            MessageExt consumed = MessageDecoder.decode(ByteBuffer.wrap(bytes, start, end - start).slice(), true, true);
            d.put("bodyDecompressed", consumed == null ? null : Describe.hex(consumed.getBody()));
            out.add(d);
        }
        return out;
    }

    /** A batch body as the producer sends it (MessageDecoder.encodeMessages). */
    void batch(String name, List<Message> messages) throws Exception {
        byte[] bytes = MessageDecoder.encodeMessages(messages);
        Map<String, Object> v = new LinkedHashMap<>();
        v.put("name", name);
        v.put("kind", "batch");
        v.put("hex", Describe.hex(bytes));
        v.put("items", decodeBatch(bytes));
        vectors.add(v);
    }

    static List<Object> decodeBatch(byte[] bytes) throws Exception {
        List<Object> out = new ArrayList<>();
        for (Message m : MessageDecoder.decodeMessages(ByteBuffer.wrap(bytes))) {
            out.add(Describe.batchItem(m));
        }
        return out;
    }

    /**
     * A JSON body in the given form: "standard" / "legacy" route forms and plain beans go through
     * RemotingSerializable.decode; "compressed" is RegisterBrokerBody's deflated binary form.
     */
    void body(String name, Object typed, byte[] bytes, String form) throws Exception {
        Map<String, Object> v = new LinkedHashMap<>();
        v.put("name", name);
        v.put("kind", "body");
        v.put("bodyClass", typed.getClass().getSimpleName());
        v.put("form", form);
        v.put("hex", Describe.hex(bytes));
        v.put("text", form.equals("compressed") ? null : new String(bytes, StandardCharsets.UTF_8));
        v.put("content", describeBody(decodeBody(bytes, typed.getClass(), form), form));
        vectors.add(v);
    }

    /**
     * The compressed register body carries only the data version, the topic lines, the filter servers
     * and (5.x) the queue-mapping infos; the 5.x wrapper's other members are fresh defaults after
     * decoding (mappingDataVersion's timestamp is the decode time), so they are not part of the content.
     */
    @SuppressWarnings("unchecked")
    static Object describeBody(Object typed, String form) {
        Object content = Describe.body(typed);
        if ("compressed".equals(form)) {
            Map<String, Object> wrapper = (Map<String, Object>) ((Map<String, Object>) content)
                .get("topicConfigSerializeWrapper");
            wrapper.remove("mappingDataVersion");
            wrapper.remove("topicQueueMappingDetailMap");
        }
        return content;
    }

    static Object decodeBody(byte[] bytes, Class<?> cls, String form) throws Exception {
        if (!"compressed".equals(form)) {
            return RemotingSerializable.decode(bytes, cls);
        }
        // 4.9.x: decode(byte[], boolean); 5.x: decode(byte[], boolean, MQVersion.Version).
        for (Method m : cls.getMethods()) {
            Class<?>[] p = m.getParameterTypes();
            if (m.getName().equals("decode") && Modifier.isStatic(m.getModifiers()) && p.length >= 2
                && p[0] == byte[].class && p[1] == boolean.class) {
                if (p.length == 2) {
                    return m.invoke(null, bytes, true);
                }
                return m.invoke(null, bytes, true, MQVersion.Version.values()[MQVersion.CURRENT_VERSION]);
            }
        }
        throw new NoSuchMethodException(cls.getName() + ".decode(byte[], boolean...)");
    }

    void write(Path outDir) throws IOException {
        Files.createDirectories(outDir);
        Map<String, Object> manifest = new LinkedHashMap<>();
        manifest.put("rocketmqVersion", rocketmqVersion);
        manifest.put("mqVersion", mqVersion);
        manifest.put("vectors", vectors);
        Files.write(outDir.resolve("vectors.json"), JSON.toJSONString(manifest,
            SerializerFeature.WriteMapNullValue, SerializerFeature.DisableCircularReferenceDetect)
            .getBytes(StandardCharsets.UTF_8));
    }

    /** Resolves a simple class name against the packages of this RocketMQ line. */
    interface ClassResolver {
        Class<?> resolve(String simpleName) throws ClassNotFoundException;
    }

    /** The bean properties this line's JSON library serializes for a body class. */
    interface BodyProperties {
        List<String> of(Class<?> cls) throws Exception;
    }

    /** Decodes each Python-encoded vector with the Java classes; never stops at the first failure. */
    static void verify(Path inDir, Path outFile, ClassResolver classes, BodyProperties bodyProperties)
        throws IOException {
        JSONObject manifest = JSON.parseObject(new String(Files.readAllBytes(inDir.resolve("vectors.json")),
            StandardCharsets.UTF_8));
        JSONArray list = manifest.getJSONArray("vectors");
        Map<String, Object> results = new LinkedHashMap<>();
        for (int i = 0; i < list.size(); i++) {
            JSONObject in = list.getJSONObject(i);
            Map<String, Object> r = new LinkedHashMap<>();
            try {
                byte[] bytes = Describe.unhex(in.getString("hex"));
                switch (in.getString("kind")) {
                    case "bodyClass": {
                        List<String> names = new ArrayList<>(bodyProperties.of(classes.resolve(in.getString("bodyClass"))));
                        names.sort(null);
                        r.put("properties", names);
                        break;
                    }
                    case "propertiesParse":
                        r.put("properties", new LinkedHashMap<>(
                            MessageDecoder.string2messageProperties(in.getString("text"))));
                        break;
                    case "propertiesWrite": {
                        Map<String, String> props = new LinkedHashMap<>();
                        JSONArray pairs = in.getJSONArray("pairs");
                        for (int j = 0; j < pairs.size(); j++) {
                            props.put(pairs.getJSONArray(j).getString(0), pairs.getJSONArray(j).getString(1));
                        }
                        r.put("text", MessageDecoder.messageProperties2String(props));
                        break;
                    }
                    case "msgIdDecode": {
                        org.apache.rocketmq.common.message.MessageId id =
                            MessageDecoder.decodeMessageId(in.getString("text"));
                        r.put("address", Describe.host(id.getAddress()));
                        r.put("offset", id.getOffset());
                        break;
                    }
                    case "headerClass":
                        r.put("fields", Describe.headerFieldTypes(classes.resolve(in.getString("headerClass"))));
                        break;
                    case "command": {
                        RemotingCommand cmd = Wire.decode(bytes);
                        r.put("command", Describe.command(cmd));
                        String hc = in.getString("headerClass");
                        if (hc != null) {
                            @SuppressWarnings("unchecked")
                            Class<? extends CommandCustomHeader> cls =
                                (Class<? extends CommandCustomHeader>) classes.resolve(hc);
                            r.put("header", Describe.header(cmd.decodeCommandCustomHeader(cls)));
                        }
                        break;
                    }
                    case "records":
                        r.put("messages", decodeRecords(bytes));
                        break;
                    case "batch":
                        r.put("items", decodeBatch(bytes));
                        break;
                    case "body": {
                        Object typed = decodeBody(bytes, classes.resolve(in.getString("bodyClass")),
                            in.getString("form"));
                        r.put("content", describeBody(typed, in.getString("form")));
                        break;
                    }
                    default:
                        throw new IllegalArgumentException("unknown kind " + in.getString("kind"));
                }
                r.put("ok", true);
            } catch (Throwable e) {
                StringWriter sw = new StringWriter();
                e.printStackTrace(new PrintWriter(sw));
                r.clear();
                r.put("ok", false);
                r.put("error", e.toString());
                r.put("trace", sw.toString());
            }
            results.put(in.getString("name"), r);
        }
        Map<String, Object> out = new LinkedHashMap<>();
        out.put("results", results);
        Files.write(outFile, JSON.toJSONString(out, SerializerFeature.WriteMapNullValue,
            SerializerFeature.DisableCircularReferenceDetect).getBytes(StandardCharsets.UTF_8));
    }
}
