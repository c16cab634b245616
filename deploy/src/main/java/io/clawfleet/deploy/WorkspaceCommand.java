package io.clawfleet.deploy;

import io.vertx.core.json.DecodeException;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;
import picocli.CommandLine.Spec;

import java.io.IOException;
import java.io.PrintWriter;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.HexFormat;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.concurrent.Callable;

/** {@code clawfleet workspace pull|push}: the tenant's workspace to a folder and back, over the workspace API. */
@Command(name = "workspace", mixinStandardHelpOptions = true,
        description = "Copy the tenant's workspace (IDENTITY.md, memory/, skills/, ...) to a folder and back.",
        subcommands = {WorkspaceCommand.PullCommand.class, WorkspaceCommand.PushCommand.class})
final class WorkspaceCommand implements Runnable {


    @Spec
    CommandSpec spec;

    @Override
    public void run() {
        spec.commandLine().usage(spec.commandLine().getOut());
    }

    @Command(name = "pull", mixinStandardHelpOptions = true,
            description = "Write every file of the workspace under DIR, creating folders as needed.")
    static final class PullCommand implements Callable<Integer> {
        @Mixin
        GatewayConnection connection;

        @Mixin
        BotOption bot;

        @Spec
        CommandSpec spec;

        @Parameters(paramLabel = "DIR", description = "Folder to write into; created if missing.")
        Path dir;

        @Option(names = "--force", description = "Write into DIR even if it has files; files of the same name are overwritten.")
        boolean force;

        @Override
        public Integer call() throws Exception {
            PrintWriter out = spec.commandLine().getOut();
            PrintWriter err = spec.commandLine().getErr();
            WorkspaceFolder folder = new WorkspaceFolder(dir);
            if (Files.exists(folder.root()) && !Files.isDirectory(folder.root())) {
                err.println("clawfleet workspace: " + dir + " is not a folder");
                return 1;
            }
            if (!force && folder.hasFiles()) {
                err.println("clawfleet workspace: " + dir + " already has files; pull into an empty or new folder, or pass --force to overwrite");
                return 1;
            }
            Map<String, JsonObject> remote = list(connection, bot);
            for (String path : remote.keySet()) {
                HttpResponse<String> response = connection.send("GET", bot.api() + "/workspace/files/" + encodePath(path));
                if (response.statusCode() != 200) {
                    err.println("clawfleet workspace: cannot read " + path + ": " + error(response));
                    return 1;
                }
                folder.write(path, new JsonObject(response.body()).getString("content"));
                line(out, "pulled", path, null);
            }
            out.println(remote.size() + " files pulled into " + dir);
            out.flush();
            return 0;
        }
    }

    @Command(name = "push", mixinStandardHelpOptions = true,
            description = {"Upload every file under DIR (dot-folders such as .git are skipped; dot-files such as .mcp.json are not).",
                    "A file changed on the server since it was listed is not overwritten: it is reported as a conflict."})
    static final class PushCommand implements Callable<Integer> {
        @Mixin
        GatewayConnection connection;

        @Mixin
        BotOption bot;

        @Spec
        CommandSpec spec;

        @Parameters(paramLabel = "DIR", description = "Folder to upload.")
        Path dir;

        @Option(names = "--prune", description = "Also delete server files that are not in DIR (except those in dot-folders).")
        boolean prune;

        @Override
        public Integer call() throws Exception {
            PrintWriter out = spec.commandLine().getOut();
            WorkspaceFolder folder = new WorkspaceFolder(dir);
            if (!Files.isDirectory(folder.root())) {
                spec.commandLine().getErr().println("clawfleet workspace: " + dir + " is not a folder");
                return 1;
            }
            Map<String, WorkspaceFolder.LocalFile> local = folder.files();
            Map<String, JsonObject> remote = list(connection, bot);
            Map<String, Integer> counts = new LinkedHashMap<>();
            for (String outcome : new String[] {"created", "updated", "unchanged", "deleted", "failed"}) {
                counts.put(outcome, 0);
            }
            for (Map.Entry<String, WorkspaceFolder.LocalFile> file : local.entrySet()) {
                String outcome = push(file.getKey(), file.getValue(), remote.get(file.getKey()), out);
                counts.merge(outcome, 1, Integer::sum);
            }
            if (prune) {
                for (String path : remote.keySet()) {
                    if (!local.containsKey(path) && !WorkspaceFolder.inDotFolder(path)) {
                        HttpResponse<String> response = connection.send("DELETE", bot.api() + "/workspace/files/" + encodePath(path));
                        boolean deleted = response.statusCode() == 204 || response.statusCode() == 404;
                        line(out, deleted ? "deleted" : "failed", path, deleted ? null : error(response));
                        counts.merge(deleted ? "deleted" : "failed", 1, Integer::sum);
                    }
                }
            }
            StringBuilder summary = new StringBuilder();
            counts.forEach((outcome, n) -> summary.append(summary.isEmpty() ? "" : ", ").append(n).append(' ').append(outcome));
            out.println(summary);
            out.flush();
            return counts.get("failed") == 0 ? 0 : 1;
        }

        /** Uploads one file unless the server has the same content; returns the outcome. */
        private String push(String path, WorkspaceFolder.LocalFile file, JsonObject server, PrintWriter out) throws Exception {
            if (file.problem() != null) {
                line(out, "failed", path, file.problem());
                return "failed";
            }
            String content;
            try {
                content = WorkspaceFolder.read(file.file());
            } catch (IOException e) {
                line(out, "failed", path, e.getMessage());
                return "failed";
            }
            if (server != null && sha256(content).equals(server.getString("sha256"))) {
                line(out, "unchanged", path, null);
                return "unchanged";
            }
            // The listed version makes the write conditional: a bot's edit since the listing is not lost.
            long version = server == null ? 0 : server.getLong("version");
            HttpResponse<String> response = connection.send("PUT", bot.api() + "/workspace/files/" + encodePath(path),
                    new JsonObject().put("content", content).put("version", version).encode());
            if (response.statusCode() == 200 || response.statusCode() == 201) {
                String outcome = server == null ? "created" : "updated";
                line(out, outcome, path, null);
                return outcome;
            }
            line(out, "failed", path, response.statusCode() == 409
                    ? "changed on the server meanwhile; pull, merge, and push again" : error(response));
            return "failed";
        }
    }

    private static void line(PrintWriter out, String outcome, String path, String detail) {
        out.printf("%-10s %s%s%n", outcome, path, detail == null ? "" : ": " + detail);
    }

    /** The server's files by path: size, version, updatedAt, sha256. */
    private static Map<String, JsonObject> list(GatewayConnection connection, BotOption bot) throws IOException, InterruptedException {
        HttpResponse<String> response = connection.send("GET", bot.api() + "/workspace");
        if (response.statusCode() != 200) {
            throw new IOException("cannot list the workspace: " + error(response));
        }
        Map<String, JsonObject> files = new LinkedHashMap<>();
        JsonArray items = new JsonObject(response.body()).getJsonArray("files");
        for (int i = 0; i < items.size(); i++) {
            JsonObject item = items.getJsonObject(i);
            files.put(item.getString("path"), item);
        }
        return files;
    }

    /** Percent-encodes each segment of a workspace path, keeping the slashes between them. */
    static String encodePath(String path) {
        StringBuilder out = new StringBuilder();
        for (byte b : path.getBytes(StandardCharsets.UTF_8)) {
            char c = (char) (b & 0xff);
            boolean plain = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9')
                    || c == '-' || c == '.' || c == '_' || c == '~' || c == '/';
            if (plain) {
                out.append(c);
            } else {
                out.append('%').append(HexFormat.of().withUpperCase().toHexDigits(b));
            }
        }
        return out.toString();
    }

    /** The message of an API error body, or the status and body as they are. */
    private static String error(HttpResponse<String> response) {
        try {
            JsonObject error = new JsonObject(response.body()).getJsonObject("error");
            if (error != null && error.getString("message") != null) {
                return error.getString("message") + " (" + response.statusCode() + ")";
            }
        } catch (DecodeException | ClassCastException e) {
            // not our JSON: show it raw
        }
        return response.statusCode() + " " + response.body();
    }

    private static String sha256(String content) {
        try {
            return HexFormat.of().formatHex(MessageDigest.getInstance("SHA-256").digest(content.getBytes(StandardCharsets.UTF_8)));
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException("SHA-256 is missing from this JDK", e);
        }
    }
}
