package io.clawfleet.deploy;

import picocli.CommandLine.Option;

import java.io.IOException;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;

/** Where the gateway is and the operator's key: the options of the commands that call {@code /admin/v1}. */
final class OperatorConnection {

    @Option(names = "--url", defaultValue = "http://127.0.0.1:8080", description = "Gateway URL (default ${DEFAULT-VALUE}).")
    String url;

    @Option(names = "--operator-key",
            description = "The operator's key (default: env CLAWFLEET_OPERATOR_KEY, else .clawfleet/operator.key).")
    String operatorKey;

    HttpResponse<String> send(String method, String path, String json, String client) throws IOException, InterruptedException {
        String key = operatorKey != null ? operatorKey : System.getenv("CLAWFLEET_OPERATOR_KEY");
        Path file = Path.of(".clawfleet", UpCommand.OPERATOR_KEY_FILE);
        if (key == null && Files.isReadable(file)) {
            key = Files.readString(file).strip();
        }
        if (key == null) {
            throw new IOException("no operator key: pass --operator-key, set CLAWFLEET_OPERATOR_KEY, or run from the folder "
                    + "where ./clawfleet up keeps .clawfleet/operator.key");
        }
        return GatewayConnection.send(GatewayConnection.http(), url, key, method, path, json, client);
    }
}
