package rmqtwin.golden;

import java.io.BufferedReader;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.util.Base64;
import java.util.Collections;
import java.util.Map;

/**
 * The line's JSON library (fastjson 1.x in 4.9.x, fastjson2 in 5.x) writing one single-entry map per
 * input line, for the codec's escape and double formatting checks. {@code s<TAB>base64} and
 * {@code b<TAB>base64}: a string given as UTF-16BE (so lone surrogates survive), written plainly (s) or
 * BrowserCompatible (b), under the key s or b; {@code d<TAB>hex}: the double of those IEEE 754 bits
 * under the key d. One output row per line: the UTF-8 JSON text, base64.
 */
final class FastjsonProbe {
    private FastjsonProbe() {
    }

    static void run(Line line, BufferedReader in, PrintStream out) throws Exception {
        Golden.eachLine(in, request -> {
            String[] p = request.split("\t", 2);
            Map<String, Object> value;
            if (p[0].equals("d")) {
                value = Collections.singletonMap("d", Double.longBitsToDouble(Long.parseUnsignedLong(p[1], 16)));
            } else {
                value = Collections.singletonMap(p[0],
                    new String(Base64.getDecoder().decode(p[1]), StandardCharsets.UTF_16BE));
            }
            String json = line.toJson(value, p[0].equals("b"));
            out.println(Base64.getEncoder().encodeToString(json.getBytes(StandardCharsets.UTF_8)));
        });
    }
}
