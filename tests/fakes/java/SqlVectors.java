import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.util.HashMap;
import java.util.Map;

import org.apache.rocketmq.filter.FilterFactory;
import org.apache.rocketmq.filter.expression.EvaluationContext;
import org.apache.rocketmq.filter.expression.Expression;

/**
 * Evaluates SQL92 selectors with the real rocketmq-filter jar on the classpath.
 *
 * <p>stdin, one case a line: hex(expression), then tab-separated property sets, each "-" (empty)
 * or comma-separated hex(key):hex(value). stdout, one line a case: "P " + hex(compile error
 * message) when the expression does not compile, else one letter per property set: T, F, N
 * (null), E (evaluation threw), X (a non-boolean result).
 */
public final class SqlVectors {
    private SqlVectors() {
    }

    public static void main(String[] args) throws Exception {
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        PrintStream out = new PrintStream(System.out, false, "UTF-8");
        String line;
        while ((line = in.readLine()) != null) {
            String[] parts = line.split("\t", -1);
            Expression compiled;
            try {
                compiled = FilterFactory.INSTANCE.get("SQL92").compile(unhex(parts[0]));
            } catch (Throwable e) {
                out.println("P " + hex(String.valueOf(e.getMessage())));
                continue;
            }
            StringBuilder results = new StringBuilder();
            for (int i = 1; i < parts.length; i++) {
                results.append(evaluate(compiled, properties(parts[i])));
            }
            out.println(results);
        }
        out.flush();
    }

    static char evaluate(Expression compiled, Map<String, Object> props) {
        Object result;
        try {
            result = compiled.evaluate(new EvaluationContext() {
                @Override
                public Object get(String name) {
                    return props.get(name);
                }

                @Override
                public Map<String, Object> keyValues() {
                    return props;
                }
            });
        } catch (Throwable e) {
            return 'E';
        }
        if (result == null) {
            return 'N';
        }
        if (!(result instanceof Boolean)) {
            return 'X';
        }
        return (Boolean) result ? 'T' : 'F';
    }

    static Map<String, Object> properties(String spec) {
        Map<String, Object> props = new HashMap<>();
        if (spec.equals("-")) {
            return props;
        }
        for (String pair : spec.split(",")) {
            int colon = pair.indexOf(':');
            props.put(unhex(pair.substring(0, colon)), unhex(pair.substring(colon + 1)));
        }
        return props;
    }

    static String unhex(String s) {
        byte[] bytes = new byte[s.length() / 2];
        for (int i = 0; i < bytes.length; i++) {
            bytes[i] = (byte) Integer.parseInt(s.substring(2 * i, 2 * i + 2), 16);
        }
        return new String(bytes, StandardCharsets.UTF_8);
    }

    static String hex(String s) {
        StringBuilder b = new StringBuilder();
        for (byte x : s.getBytes(StandardCharsets.UTF_8)) {
            b.append(String.format("%02x", x & 0xff));
        }
        return b.toString();
    }
}
