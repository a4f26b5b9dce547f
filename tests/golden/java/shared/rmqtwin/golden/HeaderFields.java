package rmqtwin.golden;

import java.io.BufferedReader;
import java.io.PrintStream;
import java.util.Map;

/**
 * The fields of the line's header classes, one class (simple name) per input line, for the codec's header
 * checks. One row per class: {@code Name<TAB>-} when the line has no such class, else
 * {@code Name<TAB>+} followed by one {@code field:JavaType:required|optional} per field (superclasses
 * included, as Describe.headerFieldTypes lists them; required means @CFNotNull).
 */
final class HeaderFields {
    private HeaderFields() {
    }

    static void run(Line line, BufferedReader in, PrintStream out) throws Exception {
        Golden.eachLine(in, name -> {
            Class<?> cls;
            try {
                cls = line.resolve(name);
            } catch (ClassNotFoundException e) {
                out.println(name + "\t-");
                return;
            }
            StringBuilder row = new StringBuilder(name).append("\t+");
            for (Map<String, Object> f : Describe.headerFieldTypes(cls)) {
                row.append('\t').append(f.get("name")).append(':').append(f.get("type")).append(':')
                    .append(Boolean.TRUE.equals(f.get("notNull")) ? "required" : "optional");
            }
            out.println(row);
        });
    }
}
