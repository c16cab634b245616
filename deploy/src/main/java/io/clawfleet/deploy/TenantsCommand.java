package io.clawfleet.deploy;

import io.vertx.core.json.JsonObject;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;

import java.net.URLEncoder;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.util.concurrent.Callable;

/**
 * {@code clawfleet tenants create|list|show|suspend|resume|delete}: the operator's tenants from the terminal,
 * through {@code /admin/v1/tenants} with the operator's key (issue 13).
 */
@Command(name = "tenants", mixinStandardHelpOptions = true,
        description = "Create, list, show, suspend, resume and delete tenants (needs the operator key).",
        subcommands = {TenantsCommand.Create.class, TenantsCommand.ListTenants.class, TenantsCommand.Show.class,
                TenantsCommand.Suspend.class, TenantsCommand.Resume.class, TenantsCommand.Delete.class})
final class TenantsCommand implements Runnable {

    @Override
    public void run() {
        new CommandLine(this).usage(System.out);
    }

    /** Prints the answer's JSON (pretty) on success, the status and body on stderr otherwise. */
    static int print(HttpResponse<String> response, int expected, String command) {
        if (response.statusCode() != expected) {
            System.err.println("clawfleet " + (command.startsWith("keys") ? "" : "tenants ") + command + ": "
                    + response.statusCode() + " " + response.body());
            return 1;
        }
        System.out.println(new JsonObject(response.body()).encodePrettily());
        return 0;
    }

    static String encode(String part) {
        return URLEncoder.encode(part, StandardCharsets.UTF_8).replace("+", "%20");
    }

    @Command(name = "create", mixinStandardHelpOptions = true,
            description = "Create a tenant; prints its first key (scope admin), which is shown only this once.")
    static final class Create implements Callable<Integer> {
        @Mixin
        OperatorConnection connection;

        @Option(names = "--name", required = true, description = "The tenant's name.")
        String name;

        @Option(names = "--id", description = "The tenant's id (lower-case letters, digits, '-', '_'); default: generated.")
        String id;

        @Override
        public Integer call() throws Exception {
            JsonObject body = new JsonObject().put("name", name);
            if (id != null) {
                body.put("id", id);
            }
            return print(connection.send("POST", "/admin/v1/tenants", body.encode(), "clawfleet-cli tenants create"), 201, "create");
        }
    }

    @Command(name = "list", mixinStandardHelpOptions = true, description = "List tenants in id order, a page at a time.")
    static final class ListTenants implements Callable<Integer> {
        @Mixin
        OperatorConnection connection;

        @Option(names = "--limit", defaultValue = "100", description = "At most this many (default ${DEFAULT-VALUE}).")
        int limit;

        @Option(names = "--cursor", description = "Start after this tenant id (the nextCursor of the page before).")
        String cursor;

        @Override
        public Integer call() throws Exception {
            String path = "/admin/v1/tenants?limit=" + limit + (cursor == null ? "" : "&cursor=" + encode(cursor));
            return print(connection.send("GET", path, null, "clawfleet-cli tenants list"), 200, "list");
        }
    }

    @Command(name = "show", mixinStandardHelpOptions = true, description = "Show one tenant.")
    static final class Show implements Callable<Integer> {
        @Mixin
        OperatorConnection connection;

        @Parameters(paramLabel = "TENANT", description = "The tenant's id.")
        String tenant;

        @Override
        public Integer call() throws Exception {
            return print(connection.send("GET", "/admin/v1/tenants/" + encode(tenant), null, "clawfleet-cli tenants show"),
                    200, "show");
        }
    }

    @Command(name = "suspend", mixinStandardHelpOptions = true,
            description = "Suspend a tenant: its keys are refused and its channels and tasks stop; nothing is deleted.")
    static final class Suspend implements Callable<Integer> {
        @Mixin
        OperatorConnection connection;

        @Parameters(paramLabel = "TENANT", description = "The tenant's id.")
        String tenant;

        @Override
        public Integer call() throws Exception {
            return print(connection.send("PATCH", "/admin/v1/tenants/" + encode(tenant),
                    new JsonObject().put("status", "suspended").encode(), "clawfleet-cli tenants suspend"), 200, "suspend");
        }
    }

    @Command(name = "resume", mixinStandardHelpOptions = true, description = "Resume a suspended tenant.")
    static final class Resume implements Callable<Integer> {
        @Mixin
        OperatorConnection connection;

        @Parameters(paramLabel = "TENANT", description = "The tenant's id.")
        String tenant;

        @Override
        public Integer call() throws Exception {
            return print(connection.send("PATCH", "/admin/v1/tenants/" + encode(tenant),
                    new JsonObject().put("status", "active").encode(), "clawfleet-cli tenants resume"), 200, "resume");
        }
    }

    @Command(name = "delete", mixinStandardHelpOptions = true,
            description = {"Delete a tenant and all of its data, for good: its keys stop at once, its rows go in batches "
                    + "on the gateways. Prints the deletion; asked again, prints the same one.",
                    "With --wait, follows it until done (progress on stderr)."})
    static final class Delete implements Callable<Integer> {
        @Mixin
        OperatorConnection connection;

        @Parameters(paramLabel = "TENANT", description = "The tenant's id.")
        String tenant;

        @Option(names = "--wait", description = "Wait until every row is deleted.")
        boolean await;

        @Option(names = "--timeout", defaultValue = "3600", description = "With --wait: give up after this many seconds "
                + "(default ${DEFAULT-VALUE}); the deletion goes on regardless.")
        long timeoutSeconds;

        @Override
        public Integer call() throws Exception {
            HttpResponse<String> response = connection.send("DELETE", "/admin/v1/tenants/" + encode(tenant), null,
                    "clawfleet-cli tenants delete");
            if (response.statusCode() != 202 && response.statusCode() != 200) {
                System.err.println("clawfleet tenants delete: " + response.statusCode() + " " + response.body());
                return 1;
            }
            JsonObject deletion = new JsonObject(response.body()).getJsonObject("deletion");
            long deadline = System.nanoTime() + java.time.Duration.ofSeconds(timeoutSeconds).toNanos();
            long shown = -1;
            while (await && !"done".equals(deletion.getString("state"))) {
                if (deletion.getLong("rowsDeleted", 0L) != shown) {
                    shown = deletion.getLong("rowsDeleted", 0L);
                    System.err.println("deleting " + tenant + ": " + shown + " rows so far");
                }
                if (System.nanoTime() - deadline > 0) {
                    System.err.println("clawfleet tenants delete: not done after " + timeoutSeconds + " s; it goes on "
                            + "(clawfleet tenants delete " + tenant + " shows it again)");
                    System.out.println(new JsonObject().put("deletion", deletion).encodePrettily());
                    return 1;
                }
                Thread.sleep(1_000); // a terminal poll, not a test
                HttpResponse<String> progress = connection.send("GET", "/admin/v1/tenants/" + encode(tenant) + "/deletion",
                        null, "clawfleet-cli tenants delete");
                if (progress.statusCode() != 200) {
                    System.err.println("clawfleet tenants delete: " + progress.statusCode() + " " + progress.body());
                    return 1;
                }
                deletion = new JsonObject(progress.body()).getJsonObject("deletion");
            }
            System.out.println(new JsonObject().put("deletion", deletion).encodePrettily());
            return 0;
        }
    }
}
