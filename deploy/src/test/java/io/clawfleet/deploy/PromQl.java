package io.clawfleet.deploy;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * The part of PromQL our alert rules use, evaluated over two scrapes of real nodes, so that a test can say of each
 * rule: it parses, every series it selects is one the nodes export, and it fires exactly when it should. Supported:
 * selectors with {@code = != =~ !~} matchers; {@code rate} and {@code increase} over a range (the difference between
 * the two scrapes, without Prometheus's extrapolation); {@code sum max min avg count} with {@code by (...)};
 * {@code + - * /} and comparisons between vectors (one-to-one on equal label sets) or with a number; {@code and}.
 * Anything else is a parse error, so a rule outside this subset fails its test instead of passing unchecked.
 */
final class PromQl {

    /** One series' value; {@code labels} include {@code __name__} until a function or operator drops it. */
    record Sample(Map<String, String> labels, double value) {
    }

    /** A parsed scrape in the Prometheus text format. */
    static List<Sample> parseScrape(String text) {
        List<Sample> samples = new ArrayList<>();
        Pattern line = Pattern.compile("^([a-zA-Z_:][a-zA-Z0-9_:]*)(\\{(.*)})? (\\S+)$");
        Pattern label = Pattern.compile("([a-zA-Z_][a-zA-Z0-9_]*)=\"((?:[^\"\\\\]|\\\\.)*)\",?");
        for (String l : text.split("\n")) {
            if (l.isBlank() || l.startsWith("#")) {
                continue;
            }
            Matcher m = line.matcher(l);
            if (!m.matches()) {
                throw new IllegalArgumentException("not a sample line: " + l);
            }
            Map<String, String> labels = new TreeMap<>();
            labels.put("__name__", m.group(1));
            if (m.group(3) != null) {
                Matcher lm = label.matcher(m.group(3));
                while (lm.find()) {
                    labels.put(lm.group(1), lm.group(2).replace("\\\"", "\"").replace("\\\\", "\\"));
                }
            }
            samples.add(new Sample(labels, Double.parseDouble(m.group(4))));
        }
        return samples;
    }

    private final List<Sample> before;
    private final List<Sample> now;
    private final double seconds;
    /** Selectors that matched no series of the later scrape. */
    final List<String> unmatched = new ArrayList<>();

    /**
     * @param before  the earlier scrape, for rates
     * @param now     the later scrape, for everything
     * @param seconds between the two
     */
    PromQl(List<Sample> before, List<Sample> now, double seconds) {
        this.before = before;
        this.now = now;
        this.seconds = seconds;
    }

    /** The series the expression yields (a number yields one series without labels). */
    List<Sample> evaluate(String expression) {
        Parser parser = new Parser(expression);
        Object value = parser.expr();
        parser.end();
        return value instanceof Double d ? List.of(new Sample(Map.of(), d)) : vector(value);
    }

    @SuppressWarnings("unchecked")
    private static List<Sample> vector(Object value) {
        return (List<Sample>) value;
    }

    private static Map<String, String> withoutName(Map<String, String> labels) {
        Map<String, String> out = new TreeMap<>(labels);
        out.remove("__name__");
        return out;
    }

    private final class Parser {
        private static final Pattern TOKEN = Pattern.compile(
                "\\s*(?:(\\d+(?:\\.\\d+)?(?:[eE][+-]?\\d+)?)|([a-zA-Z_:][a-zA-Z0-9_:]*)|(=~|!~|!=|==|>=|<=|[-+*/(){}\\[\\],=<>])|(\"(?:[^\"\\\\]|\\\\.)*\"))");
        private final List<String> tokens = new ArrayList<>();
        private int at;

        Parser(String text) {
            Matcher m = TOKEN.matcher(text);
            int from = 0;
            while (from < text.length()) {
                if (text.substring(from).isBlank()) {
                    break;
                }
                if (!m.find(from) || m.start() != from) {
                    throw new IllegalArgumentException("cannot read the expression at: " + text.substring(from));
                }
                tokens.add(m.group().strip());
                from = m.end();
            }
        }

        void end() {
            if (at != tokens.size()) {
                throw new IllegalArgumentException("unexpected " + tokens.get(at));
            }
        }

        private String peek() {
            return at < tokens.size() ? tokens.get(at) : "";
        }

        private String next() {
            if (at >= tokens.size()) {
                throw new IllegalArgumentException("the expression ends too soon");
            }
            return tokens.get(at++);
        }

        private void expect(String token) {
            String got = next();
            if (!got.equals(token)) {
                throw new IllegalArgumentException("expected " + token + ", got " + got);
            }
        }

        Object expr() {
            Object left = comparison();
            while (peek().equals("and")) {
                next();
                Object right = comparison();
                Set<Map<String, String>> keys = new java.util.HashSet<>();
                vector(right).forEach(s -> keys.add(withoutName(s.labels())));
                left = vector(left).stream().filter(s -> keys.contains(withoutName(s.labels()))).toList();
            }
            return left;
        }

        private Object comparison() {
            Object left = additive();
            String op = peek();
            if (List.of(">", "<", ">=", "<=", "==", "!=").contains(op)) {
                next();
                Object right = additive();
                return binary(left, right, op);
            }
            return left;
        }

        private Object additive() {
            Object left = multiplicative();
            while (peek().equals("+") || peek().equals("-")) {
                String op = next();
                left = binary(left, multiplicative(), op);
            }
            return left;
        }

        private Object multiplicative() {
            Object left = primary();
            while (peek().equals("*") || peek().equals("/")) {
                String op = next();
                left = binary(left, primary(), op);
            }
            return left;
        }

        private Object primary() {
            String token = next();
            if (token.matches("\\d.*")) {
                return Double.parseDouble(token);
            }
            if (token.equals("(")) {
                Object inner = expr();
                expect(")");
                return inner;
            }
            if (List.of("sum", "max", "min", "avg", "count").contains(token)) {
                List<String> by = null;
                if (peek().equals("by")) {
                    next();
                    by = labelList();
                }
                expect("(");
                List<Sample> inner = vector(expr());
                expect(")");
                if (by == null && peek().equals("by")) {
                    next();
                    by = labelList();
                }
                return aggregate(token, by == null ? List.of() : by, inner);
            }
            if (token.equals("rate") || token.equals("increase")) {
                expect("(");
                String name = next();
                List<String[]> matchers = matchers();
                expect("[");
                String range = next();
                String unit = next();
                if (!range.matches("\\d+") || !unit.matches("[smhd]")) {
                    throw new IllegalArgumentException("expected a range such as [5m], got [" + range + unit + "]");
                }
                expect("]");
                expect(")");
                List<Sample> later = select(now, name, matchers, true);
                List<Sample> earlier = select(before, name, matchers, false);
                Map<Map<String, String>, Double> old = new HashMap<>();
                earlier.forEach(s -> old.put(s.labels(), s.value()));
                List<Sample> out = new ArrayList<>();
                for (Sample s : later) {
                    double start = old.getOrDefault(s.labels(), 0.0);
                    double delta = s.value() >= start ? s.value() - start : s.value();
                    out.add(new Sample(withoutName(s.labels()), token.equals("rate") ? delta / seconds : delta));
                }
                return out;
            }
            if (token.matches("[a-zA-Z_:][a-zA-Z0-9_:]*") && !List.of("by", "and", "or", "unless", "without", "on",
                    "ignoring", "offset", "bool").contains(token)) {
                if (peek().equals("(")) {
                    throw new IllegalArgumentException("function " + token + " is outside the subset this check evaluates");
                }
                return select(now, token, matchers(), true);
            }
            throw new IllegalArgumentException("unexpected " + token);
        }

        private List<String> labelList() {
            expect("(");
            List<String> labels = new ArrayList<>();
            while (!peek().equals(")")) {
                labels.add(next());
                if (peek().equals(",")) {
                    next();
                }
            }
            expect(")");
            return labels;
        }

        private List<String[]> matchers() {
            List<String[]> matchers = new ArrayList<>();
            if (!peek().equals("{")) {
                return matchers;
            }
            next();
            while (!peek().equals("}")) {
                String label = next();
                String op = next();
                String value = next();
                if (!value.startsWith("\"") || !List.of("=", "!=", "=~", "!~").contains(op)) {
                    throw new IllegalArgumentException("expected label=\"value\", got " + label + op + value);
                }
                matchers.add(new String[] {label, op, value.substring(1, value.length() - 1)});
                if (peek().equals(",")) {
                    next();
                }
            }
            expect("}");
            return matchers;
        }
    }

    private List<Sample> select(List<Sample> from, String name, List<String[]> matchers, boolean mustMatch) {
        List<Sample> out = new ArrayList<>();
        for (Sample s : from) {
            if (!name.equals(s.labels().get("__name__"))) {
                continue;
            }
            boolean all = true;
            for (String[] m : matchers) {
                String value = s.labels().getOrDefault(m[0], "");
                boolean ok = switch (m[1]) {
                    case "=" -> value.equals(m[2]);
                    case "!=" -> !value.equals(m[2]);
                    case "=~" -> value.matches(m[2]);
                    default -> !value.matches(m[2]);
                };
                all &= ok;
            }
            if (all) {
                out.add(s);
            }
        }
        if (mustMatch && out.isEmpty()) {
            StringBuilder selector = new StringBuilder(name);
            matchers.forEach(m -> selector.append('{').append(m[0]).append(m[1]).append('"').append(m[2]).append("\"}"));
            unmatched.add(selector.toString());
        }
        return out;
    }

    private static List<Sample> aggregate(String how, List<String> by, List<Sample> inner) {
        Map<Map<String, String>, List<Double>> groups = new LinkedHashMap<>();
        for (Sample s : inner) {
            Map<String, String> key = new TreeMap<>();
            by.forEach(label -> {
                if (s.labels().containsKey(label)) {
                    key.put(label, s.labels().get(label));
                }
            });
            groups.computeIfAbsent(key, k -> new ArrayList<>()).add(s.value());
        }
        List<Sample> out = new ArrayList<>();
        groups.forEach((key, values) -> {
            var stats = values.stream().mapToDouble(Double::doubleValue).summaryStatistics();
            double value = switch (how) {
                case "sum" -> stats.getSum();
                case "max" -> stats.getMax();
                case "min" -> stats.getMin();
                case "avg" -> stats.getAverage();
                default -> stats.getCount();
            };
            out.add(new Sample(key, value));
        });
        return out;
    }

    private static Object binary(Object left, Object right, String op) {
        boolean comparison = List.of(">", "<", ">=", "<=", "==", "!=").contains(op);
        if (left instanceof Double l && right instanceof Double r) {
            if (comparison) {
                throw new IllegalArgumentException("a comparison of two numbers needs bool, outside the subset");
            }
            return arithmetic(l, r, op);
        }
        List<Sample> out = new ArrayList<>();
        if (left instanceof Double || right instanceof Double) {
            boolean numberLeft = left instanceof Double;
            double number = numberLeft ? (Double) left : (Double) right;
            for (Sample s : vector(numberLeft ? right : left)) {
                double l = numberLeft ? number : s.value();
                double r = numberLeft ? s.value() : number;
                if (comparison) {
                    if (compare(l, r, op)) {
                        out.add(new Sample(withoutName(s.labels()), s.value()));
                    }
                } else {
                    out.add(new Sample(withoutName(s.labels()), arithmetic(l, r, op)));
                }
            }
            return out;
        }
        Map<Map<String, String>, Double> rights = new HashMap<>();
        vector(right).forEach(s -> rights.put(withoutName(s.labels()), s.value()));
        for (Sample s : vector(left)) {
            Map<String, String> key = withoutName(s.labels());
            Double r = rights.get(key);
            if (r == null) {
                continue;
            }
            if (comparison) {
                if (compare(s.value(), r, op)) {
                    out.add(new Sample(key, s.value()));
                }
            } else {
                out.add(new Sample(key, arithmetic(s.value(), r, op)));
            }
        }
        return out;
    }

    private static boolean compare(double l, double r, String op) {
        return switch (op) {
            case ">" -> l > r;
            case "<" -> l < r;
            case ">=" -> l >= r;
            case "<=" -> l <= r;
            case "==" -> l == r;
            default -> l != r;
        };
    }

    private static double arithmetic(double l, double r, String op) {
        return switch (op) {
            case "+" -> l + r;
            case "-" -> l - r;
            case "*" -> l * r;
            default -> l / r;
        };
    }
}
