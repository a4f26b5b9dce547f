package rmqtwin.example.spring;

import com.google.gson.Gson;
import com.google.gson.GsonBuilder;
import java.io.PrintStream;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;

/** One JSON object per stdout line, what the test compares between targets. */
final class Events {
    private static final Gson GSON = new GsonBuilder().disableHtmlEscaping().serializeNulls().create();
    private static final PrintStream OUT = System.out;
    private static final Set<String> RECEIVED = ConcurrentHashMap.newKeySet();

    private Events() {
    }

    static Map<String, Object> event(String kind) {
        Map<String, Object> e = new LinkedHashMap<>();
        e.put("event", kind);
        e.put("time", System.currentTimeMillis());
        return e;
    }

    static synchronized void emit(Map<String, Object> event) {
        OUT.println(GSON.toJson(event));
        OUT.flush();
    }

    static void received(String body) {
        RECEIVED.add(body);
    }

    static Set<String> received() {
        return RECEIVED;
    }
}
