package io.clawfleet.deploy;

import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;

import java.util.List;
import java.util.concurrent.Callable;

/**
 * {@code clawfleet keys create|list|revoke|rotate --tenant ID}: a tenant's keys from the terminal, with
 * the operator's key, through {@code /admin/v1/tenants/{id}/keys} (issue 13).
 */
@Command(name = "keys", mixinStandardHelpOptions = true,
        description = "Create, list, revoke and rotate a tenant's API keys (needs the operator key).",
        subcommands = {KeysCommand.Create.class, KeysCommand.ListKeys.class, KeysCommand.Revoke.class, KeysCommand.Rotate.class})
final class KeysCommand implements Runnable {

    @Override
    public void run() {
        new CommandLine(this).usage(System.out);
    }

    private static String keys(String tenant) {
        return "/admin/v1/tenants/" + TenantsCommand.encode(tenant) + "/keys";
    }

    @Command(name = "create", mixinStandardHelpOptions = true,
            description = "Make a key; prints it with its secret, which is shown only this once.")
    static final class Create implements Callable<Integer> {
        @Mixin
        OperatorConnection connection;

        @Option(names = "--tenant", required = true, description = "The tenant's id.")
        String tenant;

        @Option(names = "--name", required = true, description = "What the key is for (shown in lists and the audit trail).")
        String name;

        @Option(names = "--scope", required = true, split = ",", paramLabel = "SCOPE",
                description = "chat, read and/or admin (repeat or separate with commas).")
        List<String> scopes;

        @Option(names = "--expires-at", paramLabel = "INSTANT", description = "When it stops working, like 2027-01-31T00:00:00Z.")
        String expiresAt;

        @Option(names = "--bots", split = ",", paramLabel = "BOT",
                description = "Limit the key to these bots of the tenant (default: every bot).")
        List<String> bots;

        @Option(names = "--messages-per-minute", paramLabel = "N",
                description = "The key's own message rate, inside the tenant's (default: none).")
        Integer messagesPerMinute;

        @Override
        public Integer call() throws Exception {
            JsonObject body = new JsonObject().put("name", name).put("scopes", new JsonArray(scopes));
            if (expiresAt != null) {
                body.put("expiresAt", expiresAt);
            }
            if (bots != null && !bots.isEmpty()) {
                body.put("botIds", new JsonArray(bots));
            }
            if (messagesPerMinute != null) {
                body.put("messagesPerMinute", messagesPerMinute);
            }
            return TenantsCommand.print(connection.send("POST", keys(tenant), body.encode(), "clawfleet-cli keys create"), 201,
                    "keys create");
        }
    }

    @Command(name = "list", mixinStandardHelpOptions = true, description = "List a tenant's keys (never their secrets).")
    static final class ListKeys implements Callable<Integer> {
        @Mixin
        OperatorConnection connection;

        @Option(names = "--tenant", required = true, description = "The tenant's id.")
        String tenant;

        @Override
        public Integer call() throws Exception {
            return TenantsCommand.print(connection.send("GET", keys(tenant), null, "clawfleet-cli keys list"), 200, "keys list");
        }
    }

    @Command(name = "revoke", mixinStandardHelpOptions = true,
            description = "Revoke a key: refused on every gateway from the next request.")
    static final class Revoke implements Callable<Integer> {
        @Mixin
        OperatorConnection connection;

        @Option(names = "--tenant", required = true, description = "The tenant's id.")
        String tenant;

        @Parameters(paramLabel = "KEY_ID", description = "The key's id (as listed).")
        String keyId;

        @Override
        public Integer call() throws Exception {
            return TenantsCommand.print(connection.send("DELETE", keys(tenant) + "/" + TenantsCommand.encode(keyId), null,
                    "clawfleet-cli keys revoke"), 200, "keys revoke");
        }
    }

    @Command(name = "rotate", mixinStandardHelpOptions = true,
            description = "Replace a key with a new one; the old one works --grace-seconds longer.")
    static final class Rotate implements Callable<Integer> {
        @Mixin
        OperatorConnection connection;

        @Option(names = "--tenant", required = true, description = "The tenant's id.")
        String tenant;

        @Option(names = "--grace-seconds", defaultValue = "0", description = "How long the old key keeps working (default 0).")
        long graceSeconds;

        @Parameters(paramLabel = "KEY_ID", description = "The key's id (as listed).")
        String keyId;

        @Override
        public Integer call() throws Exception {
            return TenantsCommand.print(connection.send("POST", keys(tenant) + "/" + TenantsCommand.encode(keyId) + "/rotate",
                    new JsonObject().put("graceSeconds", graceSeconds).encode(), "clawfleet-cli keys rotate"), 201, "keys rotate");
        }
    }
}
