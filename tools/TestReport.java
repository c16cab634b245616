import java.io.IOException;
import java.io.PrintStream;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.TreeSet;
import javax.xml.XMLConstants;
import javax.xml.parsers.DocumentBuilder;
import javax.xml.parsers.DocumentBuilderFactory;
import org.w3c.dom.Element;
import org.w3c.dom.NodeList;
import org.xml.sax.helpers.DefaultHandler;

/**
 * The end-of-run summary of {@code ./clawfleet test}: reads the JUnit XML reports that surefire and
 * failsafe wrote ({@code <module>/target/surefire-reports/TEST-*.xml} and
 * {@code <module>/target/failsafe-reports/TEST-*.xml}) and prints the counts, every failed and skipped
 * test (skips with their reason), and the 10 slowest test classes.
 *
 * <pre>
 *   java tools/TestReport.java ROOT              the summary; exit 0, or 2 when there is no report at all
 *   java tools/TestReport.java --failures ROOT   only "Class.method: first line of the message", one a line
 * </pre>
 *
 * Only the JDK: it runs with the source launcher, without a build.
 */
public class TestReport {

    private static final int SLOWEST = 10;
    private static final int MAX_MESSAGE = 240;

    record Suite(String module, String name, double time, List<Case> cases) {}

    /** One test case; {@code outcome} is "passed", "failed", "error" or "skipped". */
    record Case(String module, String className, String name, String outcome, String message) {

        String label() {
            String simple = className.substring(className.lastIndexOf('.') + 1);
            // A class-level failure (a @BeforeAll, a class that cannot start) has no method name.
            return name.isEmpty() || name.equals(className) || name.equals(simple) ? simple : simple + "." + name;
        }
    }

    public static void main(String[] args) {
        boolean failuresOnly = args.length > 0 && args[0].equals("--failures");
        String rootArg = args.length > (failuresOnly ? 1 : 0) ? args[failuresOnly ? 1 : 0] : ".";
        Path root = Path.of(rootArg);

        List<Path> files = reportFiles(root);
        if (files.isEmpty()) {
            System.err.println("No test reports found under " + root.toAbsolutePath().normalize()
                + " (looked for */target/surefire-reports/TEST-*.xml and */target/failsafe-reports/TEST-*.xml);"
                + " the build stopped before any test ran, or no test matched.");
            System.exit(2);
        }

        List<Suite> suites = new ArrayList<>();
        List<String> unreadable = new ArrayList<>();
        DocumentBuilderFactory factory = newFactory();
        for (Path file : files) {
            try {
                suites.add(read(factory, file, moduleOf(root, file)));
            } catch (Exception e) {
                unreadable.add(root.relativize(file) + " (" + firstLine(String.valueOf(e.getMessage())) + ")");
            }
        }

        if (failuresOnly) {
            for (Suite suite : suites) {
                for (Case c : suite.cases()) {
                    if (c.outcome().equals("failed") || c.outcome().equals("error")) {
                        System.out.println(c.label() + ": " + c.message());
                    }
                }
            }
            for (String file : unreadable) {
                System.err.println("unreadable report: " + file);
            }
            return;
        }
        printSummary(System.out, suites, unreadable);
    }

    // ---- finding and reading the reports ----

    /** ROOT/<module>/target/{surefire,failsafe}-reports/TEST-*.xml, and ROOT/target/... for a single module. */
    static List<Path> reportFiles(Path root) {
        List<Path> modules = new ArrayList<>();
        modules.add(root);
        try (DirectoryStream<Path> children = Files.newDirectoryStream(root, Files::isDirectory)) {
            children.forEach(modules::add);
        } catch (IOException e) {
            // Not a directory, or unreadable: no reports.
        }
        TreeSet<Path> files = new TreeSet<>();
        for (Path module : modules) {
            for (String kind : List.of("surefire-reports", "failsafe-reports")) {
                Path dir = module.resolve("target").resolve(kind);
                if (!Files.isDirectory(dir)) {
                    continue;
                }
                try (DirectoryStream<Path> reports = Files.newDirectoryStream(dir, "TEST-*.xml")) {
                    reports.forEach(files::add);
                } catch (IOException e) {
                    // Skip a folder that vanished or cannot be listed.
                }
            }
        }
        return new ArrayList<>(files);
    }

    static String moduleOf(Path root, Path file) {
        Path relative = root.relativize(file);
        // <module>/target/<kind>/TEST-x.xml has 4 parts; target/<kind>/TEST-x.xml (the root itself) has 3.
        return relative.getNameCount() >= 4 ? relative.getName(0).toString() : ".";
    }

    static DocumentBuilderFactory newFactory() {
        try {
            DocumentBuilderFactory factory = DocumentBuilderFactory.newInstance();
            factory.setFeature(XMLConstants.FEATURE_SECURE_PROCESSING, true);
            factory.setFeature("http://xml.org/sax/features/external-general-entities", false);
            factory.setFeature("http://xml.org/sax/features/external-parameter-entities", false);
            factory.setFeature("http://apache.org/xml/features/nonvalidating/load-external-dtd", false);
            factory.setExpandEntityReferences(false);
            return factory;
        } catch (Exception e) {
            throw new IllegalStateException("no usable XML parser in this JDK", e);
        }
    }

    static Suite read(DocumentBuilderFactory factory, Path file, String module) throws Exception {
        DocumentBuilder parser = factory.newDocumentBuilder();
        // The default error handler prints each parse error to stderr; here a bad file is reported once, as unreadable.
        parser.setErrorHandler(new DefaultHandler());
        Element root = parser.parse(file.toFile()).getDocumentElement();
        if (!root.getTagName().equals("testsuite")) {
            throw new IllegalArgumentException("not a <testsuite> report but <" + root.getTagName() + ">");
        }
        String suiteName = root.getAttribute("name");
        List<Case> cases = new ArrayList<>();
        NodeList children = root.getChildNodes();
        for (int i = 0; i < children.getLength(); i++) {
            if (children.item(i) instanceof Element testcase && testcase.getTagName().equals("testcase")) {
                String className = testcase.getAttribute("classname");
                cases.add(readCase(testcase, module, className.isEmpty() ? suiteName : className));
            }
        }
        return new Suite(module, suiteName, seconds(root.getAttribute("time")), cases);
    }

    static Case readCase(Element testcase, String module, String className) {
        String name = testcase.getAttribute("name");
        Element failure = child(testcase, "failure");
        Element error = child(testcase, "error");
        Element skipped = child(testcase, "skipped");
        if (failure != null) {
            return new Case(module, className, name, "failed", problem(failure, false));
        }
        if (error != null) {
            return new Case(module, className, name, "error", problem(error, true));
        }
        if (skipped != null) {
            String reason = firstLine(skipped.getAttribute("message"));
            if (reason.isEmpty()) {
                // Surefire 3.5 writes an aborted test (a JUnit assumption) without a message attribute but with
                // the stack trace, whose first line is "<exception type>: <reason>".
                reason = firstLine(skipped.getTextContent());
                String type = skipped.getAttribute("type");
                if (!type.isEmpty() && reason.startsWith(type + ": ")) {
                    reason = reason.substring(type.length() + 2).strip();
                } else if (reason.equals(type)) {
                    reason = "";
                }
            }
            return new Case(module, className, name, "skipped", reason.isEmpty() ? "(no reason given)" : reason);
        }
        return new Case(module, className, name, "passed", "");
    }

    /** The first line of a failure's message; for an error the exception type too, since the message alone may say little. */
    static String problem(Element element, boolean error) {
        String message = firstLine(element.getAttribute("message"));
        String type = element.getAttribute("type");
        String simpleType = type.substring(type.lastIndexOf('.') + 1);
        if (message.isEmpty()) {
            // No message: the stack trace's first line names the exception (and its message, if any).
            String trace = firstLine(element.getTextContent());
            message = !trace.isEmpty() ? trace : type;
        } else if (error && !simpleType.isEmpty() && !message.contains(simpleType)) {
            message = simpleType + ": " + message;
        }
        return message.isEmpty() ? "(no message)" : message;
    }

    static Element child(Element parent, String tag) {
        NodeList children = parent.getChildNodes();
        for (int i = 0; i < children.getLength(); i++) {
            if (children.item(i) instanceof Element e && e.getTagName().equals(tag)) {
                return e;
            }
        }
        return null;
    }

    static String firstLine(String text) {
        if (text == null) {
            return "";
        }
        for (String line : text.split("\\R")) {
            String trimmed = line.strip();
            if (!trimmed.isEmpty()) {
                return trimmed.length() > MAX_MESSAGE ? trimmed.substring(0, MAX_MESSAGE) + " ..." : trimmed;
            }
        }
        return "";
    }

    static double seconds(String time) {
        try {
            // Surefire writes "12.345"; older versions could group thousands ("1,234.5").
            return Double.parseDouble(time.replace(",", "").strip());
        } catch (NumberFormatException e) {
            return 0;
        }
    }

    // ---- the summary ----

    static void printSummary(PrintStream out, List<Suite> suites, List<String> unreadable) {
        List<Case> all = suites.stream().flatMap(s -> s.cases().stream()).toList();
        long failed = all.stream().filter(c -> c.outcome().equals("failed") || c.outcome().equals("error")).count();
        long errors = all.stream().filter(c -> c.outcome().equals("error")).count();
        long skipped = all.stream().filter(c -> c.outcome().equals("skipped")).count();
        double time = suites.stream().mapToDouble(Suite::time).sum();
        long modules = suites.stream().map(Suite::module).distinct().count();

        out.println();
        out.printf(Locale.ROOT, "tests: %d run, %d failed%s, %d skipped, in %s of test time (%d %s in %d %s)%n",
            all.size(), failed, errors > 0 ? " (" + errors + (errors == 1 ? " error" : " errors") + ")" : "", skipped,
            duration(time), suites.size(), suites.size() == 1 ? "class" : "classes",
            modules, modules == 1 ? "module" : "modules");
        for (String file : unreadable) {
            out.println("UNREADABLE report " + file);
        }

        for (Case c : all) {
            if (c.outcome().equals("failed") || c.outcome().equals("error")) {
                out.println("FAILED " + c.module() + " " + c.label() + ": " + c.message());
            }
        }

        // Skips grouped by module, class and reason, in report order: one line for a class whose tests
        // all skip for the same reason (a missing tool), instead of one line per test.
        Map<List<String>, List<Case>> groups = new LinkedHashMap<>();
        for (Case c : all) {
            if (c.outcome().equals("skipped")) {
                groups.computeIfAbsent(List.of(c.module(), c.className(), c.message()), k -> new ArrayList<>()).add(c);
            }
        }
        for (List<Case> group : groups.values()) {
            Case first = group.get(0);
            if (group.size() == 1) {
                out.println("SKIPPED " + first.module() + " " + first.label() + ": " + first.message());
            } else {
                String simple = first.className().substring(first.className().lastIndexOf('.') + 1);
                out.println("SKIPPED " + first.module() + " " + simple + " (" + group.size() + " tests): " + first.message());
            }
        }

        suites.stream()
            .sorted(Comparator.comparingDouble(Suite::time).reversed())
            .limit(SLOWEST)
            .forEach(s -> out.printf(Locale.ROOT, "slowest: %5.1f s  %s  %s%n", s.time(), s.module(), s.name()));
    }

    static String duration(double seconds) {
        return seconds < 10 ? String.format(Locale.ROOT, "%.1f s", seconds) : String.format(Locale.ROOT, "%.0f s", seconds);
    }
}
