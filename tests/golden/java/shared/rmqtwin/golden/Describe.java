package rmqtwin.golden;

import com.alibaba.fastjson.JSON;
import java.lang.reflect.Field;
import java.lang.reflect.Modifier;
import java.math.BigDecimal;
import java.math.BigInteger;
import java.net.InetSocketAddress;
import java.net.SocketAddress;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HexFormat;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import org.apache.rocketmq.common.message.Message;
import org.apache.rocketmq.common.message.MessageExt;
import org.apache.rocketmq.remoting.annotation.CFNotNull;
import org.apache.rocketmq.remoting.protocol.RemotingCommand;
import org.apache.rocketmq.remoting.protocol.RemotingSerializable;

/**
 * Field-by-field descriptions of what Java holds after encoding or decoding, written next to
 * each vector so the Python side can compare field by field (not just bytes).
 */
final class Describe {
    private static final HexFormat HEX = HexFormat.of();

    private Describe() {
    }

    static String hex(byte[] bytes) {
        return bytes == null ? null : HEX.formatHex(bytes);
    }

    static byte[] unhex(String hex) {
        return hex == null ? null : HEX.parseHex(hex);
    }

    static Map<String, Object> command(RemotingCommand cmd) {
        Map<String, Object> d = new LinkedHashMap<>();
        d.put("code", cmd.getCode());
        d.put("language", cmd.getLanguage() == null ? null : cmd.getLanguage().name());
        d.put("version", cmd.getVersion());
        d.put("opaque", cmd.getOpaque());
        d.put("flag", cmd.getFlag());
        d.put("remark", cmd.getRemark());
        d.put("extFields", cmd.getExtFields() == null ? null : extFields(cmd.getExtFields()));
        d.put("body", hex(cmd.getBody()));
        d.put("serializeType", cmd.getSerializeTypeCurrentRPC().name());
        return d;
    }

    /**
     * The ext map in Java's order. A null key (ROCKETMQ zero-length key) cannot be reached through
     * getExtFields().get(name), so it is left out (fastjson would write it as a bare, invalid null key).
     */
    static Map<String, String> extFields(Map<String, String> ext) {
        Map<String, String> out = new LinkedHashMap<>();
        for (Map.Entry<String, String> e : ext.entrySet()) {
            if (e.getKey() != null) {
                out.put(e.getKey(), e.getValue());
            }
        }
        return out;
    }

    /** Every non-static, non-null field of a custom header and its superclasses, typed. */
    static Map<String, Object> header(Object header) throws IllegalAccessException {
        Map<String, Object> d = new TreeMap<>();
        for (Class<?> c = header.getClass(); c != null && c != Object.class; c = c.getSuperclass()) {
            for (Field f : c.getDeclaredFields()) {
                if (Modifier.isStatic(f.getModifiers()) || f.getName().startsWith("this")) {
                    continue;
                }
                f.setAccessible(true);
                Object v = f.get(header);
                if (v == null) {
                    continue;
                }
                d.putIfAbsent(f.getName(), v instanceof Enum ? ((Enum<?>) v).name() : v);
            }
        }
        return d;
    }

    /** Names of every non-static field of a header class and its superclasses (what Java can carry). */
    static List<String> headerFields(Class<?> cls) {
        List<String> names = new ArrayList<>();
        for (Class<?> c = cls; c != null && c != Object.class; c = c.getSuperclass()) {
            for (Field f : c.getDeclaredFields()) {
                if (!Modifier.isStatic(f.getModifiers()) && !f.getName().startsWith("this")
                    && !names.contains(f.getName())) {
                    names.add(f.getName());
                }
            }
        }
        names.sort(null);
        return names;
    }

    /** Every field of a header class: Java type, @CFNotNull, declaring class (for structural checks). */
    static List<Map<String, Object>> headerFieldTypes(Class<?> cls) {
        List<Map<String, Object>> out = new ArrayList<>();
        List<String> seen = new ArrayList<>();
        for (Class<?> c = cls; c != null && c != Object.class; c = c.getSuperclass()) {
            for (Field f : c.getDeclaredFields()) {
                if (Modifier.isStatic(f.getModifiers()) || f.getName().startsWith("this") || seen.contains(f.getName())) {
                    continue;
                }
                seen.add(f.getName());
                Map<String, Object> d = new LinkedHashMap<>();
                d.put("name", f.getName());
                d.put("type", f.getType().getSimpleName());
                d.put("notNull", f.isAnnotationPresent(CFNotNull.class));
                d.put("declaredIn", c.getSimpleName());
                out.add(d);
            }
        }
        return out;
    }

    static String host(SocketAddress addr) {
        InetSocketAddress a = (InetSocketAddress) addr;
        return a == null ? null : a.getAddress().getHostAddress() + "|" + a.getPort();
    }

    /** A batch item (Message, as MessageDecoder.decodeMessages returns it). */
    static Map<String, Object> batchItem(Message m) {
        Map<String, Object> d = new LinkedHashMap<>();
        d.put("flag", m.getFlag());
        d.put("body", hex(m.getBody()));
        d.put("properties", m.getProperties() == null ? null : new LinkedHashMap<>(m.getProperties()));
        return d;
    }

    /** Every MessageExt field a stored record carries, plus the msgId Java derives from it. */
    static Map<String, Object> message(MessageExt m) {
        Map<String, Object> d = new LinkedHashMap<>();
        d.put("storeSize", m.getStoreSize());
        d.put("bodyCRC", m.getBodyCRC());
        d.put("queueId", m.getQueueId());
        d.put("flag", m.getFlag());
        d.put("queueOffset", m.getQueueOffset());
        d.put("commitLogOffset", m.getCommitLogOffset());
        d.put("sysFlag", m.getSysFlag());
        d.put("bornTimestamp", m.getBornTimestamp());
        d.put("bornHost", host(m.getBornHost()));
        d.put("storeTimestamp", m.getStoreTimestamp());
        d.put("storeHost", host(m.getStoreHost()));
        d.put("reconsumeTimes", m.getReconsumeTimes());
        d.put("preparedTransactionOffset", m.getPreparedTransactionOffset());
        d.put("body", hex(m.getBody()));
        d.put("topic", m.getTopic());
        d.put("properties", m.getProperties() == null ? null : new LinkedHashMap<>(m.getProperties()));
        d.put("msgId", m.getMsgId());
        return d;
    }

    /**
     * Semantic content of a JSON body: Java serializes the typed object itself, and the
     * text is read back with fastjson's generic parser, which keeps integer and object map
     * keys as such. Maps with only string keys become JSON objects; any other map becomes
     * {"$pairs": [[key, value], ...]}; lists (often Java sets) are sorted, so both sides compare
     * content rather than HashMap/HashSet iteration order.
     */
    static Object body(Object typed) {
        // The line's own serializer (fastjson in 4.9.x, fastjson2 in 5.5), read back leniently by fastjson.
        return canon(JSON.parse(RemotingSerializable.toJson(typed, false)));
    }

    static Object canon(Object o) {
        if (o instanceof Map) {
            Map<?, ?> m = (Map<?, ?>) o;
            boolean stringKeys = true;
            for (Object k : m.keySet()) {
                stringKeys &= k instanceof String;
            }
            if (stringKeys) {
                Map<String, Object> out = new TreeMap<>();
                for (Map.Entry<?, ?> e : m.entrySet()) {
                    out.put((String) e.getKey(), canon(e.getValue()));
                }
                return out;
            }
            List<Object> pairs = new ArrayList<>();
            for (Map.Entry<?, ?> e : m.entrySet()) {
                List<Object> pair = new ArrayList<>();
                pair.add(canon(e.getKey()));
                pair.add(canon(e.getValue()));
                pairs.add(pair);
            }
            pairs.sort((a, b) -> JSON.toJSONString(a).compareTo(JSON.toJSONString(b)));
            Map<String, Object> out = new TreeMap<>();
            out.put("$pairs", pairs);
            return out;
        }
        if (o instanceof Collection) {
            List<Object> out = new ArrayList<>();
            for (Object x : (Collection<?>) o) {
                out.add(canon(x));
            }
            out.sort((a, b) -> JSON.toJSONString(a).compareTo(JSON.toJSONString(b)));
            return out;
        }
        if (o instanceof BigDecimal) {
            return ((BigDecimal) o).doubleValue();
        }
        if (o instanceof BigInteger || o instanceof Integer || o instanceof Short || o instanceof Byte) {
            return ((Number) o).longValue();
        }
        return o;
    }
}
