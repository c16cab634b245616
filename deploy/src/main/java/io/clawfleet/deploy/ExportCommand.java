package io.clawfleet.deploy;

import io.vertx.core.json.DecodeException;
import io.vertx.core.json.JsonObject;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;

import java.io.IOException;
import java.io.PrintWriter;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.util.concurrent.Callable;
import java.util.zip.ZipEntry;
import java.util.zip.ZipFile;

/**
 * {@code clawfleet export --out FILE}: the tenant's whole archive ({@code GET /api/v1/export}) streamed
 * to a file. It is written beside FILE first and moved into place only once it reads back as complete
 * (its central directory and {@code manifest.json} are there), so FILE is never a cut archive.
 */
@Command(name = "export", mixinStandardHelpOptions = true,
        description = "Download everything of the tenant (admin key) as a zip archive; the format is in docs/TENANTS.md.")
final class ExportCommand implements Callable<Integer> {

    @Mixin
    GatewayConnection connection;

    @Spec
    CommandSpec spec;

    @Option(names = "--out", required = true, paramLabel = "FILE", description = "Where to write the archive (a .zip).")
    Path out;

    @Option(names = "--force", description = "Overwrite FILE if it exists.")
    boolean force;

    @Override
    public Integer call() throws Exception {
        PrintWriter stdout = spec.commandLine().getOut();
        PrintWriter stderr = spec.commandLine().getErr();
        Path target = out.toAbsolutePath();
        if (Files.exists(target) && !force) {
            stderr.println("clawfleet export: " + target + " exists; pass --force to overwrite it");
            return 1;
        }
        Path part = target.resolveSibling(target.getFileName() + ".part");
        try {
            HttpResponse<Path> response;
            try {
                response = connection.download("/api/v1/export", part, "clawfleet-cli export");
            } catch (IOException e) {
                stderr.println("clawfleet export: the download broke off (" + e.getMessage()
                        + "); the archive is incomplete, nothing was written to " + target
                        + "; the gateway's log names the cause ('export failed')");
                return 1;
            }
            if (response.statusCode() != 200) {
                stderr.println("clawfleet export: " + response.statusCode() + " " + Files.readString(part, StandardCharsets.UTF_8));
                return 1;
            }
            JsonObject manifest = manifest(part);
            if (manifest == null) {
                stderr.println("clawfleet export: the archive arrived incomplete (no manifest.json); nothing was written to " + target);
                return 1;
            }
            Files.move(part, target, StandardCopyOption.REPLACE_EXISTING, StandardCopyOption.ATOMIC_MOVE);
            stdout.printf("exported tenant %s (snapshot %s) to %s, %,d bytes%n", manifest.getString("tenant"),
                    manifest.getString("exportedAt"), target, Files.size(target));
            manifest.getJsonObject("entries").forEach(entry -> stdout.printf("  %-30s %,d%n", entry.getKey(), entry.getValue()));
            return 0;
        } finally {
            Files.deleteIfExists(part);
        }
    }

    /** The archive's manifest, or null when the archive is not a complete zip with one. */
    static JsonObject manifest(Path archive) {
        try (ZipFile zip = new ZipFile(archive.toFile(), StandardCharsets.UTF_8)) {
            ZipEntry entry = zip.getEntry("manifest.json");
            if (entry == null) {
                return null;
            }
            return new JsonObject(new String(zip.getInputStream(entry).readAllBytes(), StandardCharsets.UTF_8));
        } catch (IOException | DecodeException e) {
            return null;
        }
    }
}
