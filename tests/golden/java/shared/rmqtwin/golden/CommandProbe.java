package rmqtwin.golden;

import java.io.BufferedReader;
import java.io.PrintStream;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.HashMap;
import java.util.Map;
import java.util.TreeMap;
import org.apache.rocketmq.remoting.protocol.LanguageCode;
import org.apache.rocketmq.remoting.protocol.RemotingCommand;
import org.apache.rocketmq.remoting.protocol.SerializeType;

/**
 * RemotingCommand.encode and RemotingCommand.decode on commands the codec tests make up, one per input
 * line. {@code E ser|code|language|version|opaque|flag|remark|capacity|k=v,...|body} (strings as UTF-8
 * hex, ~ for null, capacity -1 for no ext map, else the HashMap's initial capacity): prints the frame
 * hex. {@code D hex} (a frame without its length word): prints
 * {@code code|LANGUAGE|version|opaque|flag|remark|k=v,...|body} with the ext fields sorted, or ERR.
 */
final class CommandProbe {
    private CommandProbe() {
    }

    static String str(String hex) {
        return new String(Describe.unhex(hex), StandardCharsets.UTF_8);
    }

    static String hex(String s) {
        return s == null ? "~" : Describe.hex(s.getBytes(StandardCharsets.UTF_8));
    }

    static void run(BufferedReader in, PrintStream out) throws Exception {
        Golden.eachLine(in, line ->
            out.println(line.startsWith("D ") ? decode(line.substring(2)) : encode(line.substring(2))));
    }

    static String decode(String frameHex) {
        try {
            RemotingCommand c = RemotingCommand.decode(ByteBuffer.wrap(Describe.unhex(frameHex)));
            StringBuilder sb = new StringBuilder();
            sb.append(c.getCode()).append('|').append(c.getLanguage()).append('|').append(c.getVersion())
                .append('|').append(c.getOpaque()).append('|').append(c.getFlag()).append('|')
                .append(hex(c.getRemark())).append('|');
            if (c.getExtFields() == null) {
                sb.append('~');
            } else {
                for (Map.Entry<String, String> e : new TreeMap<>(c.getExtFields()).entrySet()) {
                    sb.append(hex(e.getKey())).append('=').append(hex(e.getValue())).append(',');
                }
            }
            sb.append('|').append(c.getBody() == null ? "~" : Describe.hex(c.getBody()));
            return sb.toString();
        } catch (Throwable t) {
            return "ERR " + Golden.field(t);
        }
    }

    static String encode(String spec) {
        String[] p = spec.split("\\|", -1);
        RemotingCommand c = RemotingCommand.createRequestCommand(Integer.parseInt(p[1]), null);
        c.setSerializeTypeCurrentRPC(p[0].equals("1") ? SerializeType.ROCKETMQ : SerializeType.JSON);
        c.setLanguage(LanguageCode.values()[Integer.parseInt(p[2])]);
        c.setVersion(Integer.parseInt(p[3]));
        c.setOpaque(Integer.parseInt(p[4]));
        c.setFlag(Integer.parseInt(p[5]));
        c.setRemark(p[6].equals("~") ? null : str(p[6]));
        int cap = Integer.parseInt(p[7]);
        if (cap >= 0) {
            HashMap<String, String> m = new HashMap<>(cap);
            if (!p[8].isEmpty()) {
                for (String kv : p[8].split(",")) {
                    String[] x = kv.split("=", -1);
                    m.put(str(x[0]), str(x[1]));
                }
            }
            c.setExtFields(m);
        }
        if (!p[9].equals("~")) {
            c.setBody(Describe.unhex(p[9]));
        }
        ByteBuffer bb = c.encode();
        byte[] frame = new byte[bb.remaining()];
        bb.get(frame);
        return Describe.hex(frame);
    }
}
