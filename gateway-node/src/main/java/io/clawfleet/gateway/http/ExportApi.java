package io.clawfleet.gateway.http;

import io.clawfleet.gateway.auth.ApiKeyAuth;
import io.clawfleet.gateway.export.ExportException;
import io.clawfleet.gateway.export.TenantExport;
import io.clawfleet.shared.http.ApiException;
import io.vertx.core.http.HttpServerResponse;
import io.vertx.core.http.HttpVersion;
import io.vertx.ext.web.RoutingContext;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.time.OffsetDateTime;
import java.time.ZoneOffset;
import java.time.format.DateTimeFormatter;
import java.time.format.DateTimeParseException;
import java.util.Objects;
import java.util.UUID;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * {@code GET /api/v1/export} (admin scope): the tenant's whole archive, streamed as it is read
 * ({@link TenantExport}; format in docs/TENANTS.md). Failures before the first byte are answered as
 * usual (404, 503); a failure after it is logged with an error id and the connection is reset, so the
 * download fails and the archive lacks its manifest and central directory. Each export holds a
 * database connection for its length, so a gateway runs few at once and answers 429 beyond that.
 */
public final class ExportApi {

    private static final Logger LOG = LoggerFactory.getLogger(ExportApi.class);
    private static final DateTimeFormatter STAMP = DateTimeFormatter.ofPattern("yyyyMMdd'T'HHmmss'Z'");

    private final TenantExport export;
    private final int maxInFlight;
    private final AtomicInteger inFlight = new AtomicInteger();

    public ExportApi(TenantExport export, int maxInFlight) {
        this.export = Objects.requireNonNull(export);
        this.maxInFlight = maxInFlight;
    }

    public void export(RoutingContext ctx) {
        if (!ctx.queryParams().isEmpty()) {
            throw ApiException.badRequest("GET /api/v1/export takes no query parameters");
        }
        String tenantId = ApiKeyAuth.tenant(ctx).id();
        if (inFlight.incrementAndGet() > maxInFlight) {
            inFlight.decrementAndGet();
            throw new ApiException(429, "too_many_exports", "this gateway is running " + maxInFlight
                    + " exports already; retry later", 30);
        }
        export.open(tenantId).onComplete(opened -> {
            if (opened.failed() || opened.result().isEmpty()) {
                inFlight.decrementAndGet();
                ctx.fail(opened.failed() ? ApiException.unavailable("the export cannot start", opened.cause(), 5)
                        : ApiException.notFound("no tenant " + tenantId));
                return;
            }
            stream(ctx, tenantId, opened.result().get());
        });
    }

    /** The snapshot's time as the file name shows it; the clock's if the database's text is not as expected. */
    private static String stamp(String exportedAt) {
        try {
            return OffsetDateTime.parse(exportedAt).withOffsetSameInstant(ZoneOffset.UTC).format(STAMP);
        } catch (DateTimeParseException e) {
            return OffsetDateTime.now(ZoneOffset.UTC).format(STAMP);
        }
    }

    private void stream(RoutingContext ctx, String tenantId, TenantExport.Run run) {
        HttpServerResponse response = ctx.response();
        String stamp = stamp(run.exportedAt());
        response.setChunked(true)
                .putHeader("content-type", "application/zip")
                .putHeader("content-disposition", "attachment; filename=\"clawfleet-export-" + tenantId + "-" + stamp + ".zip\"")
                .putHeader("cache-control", "no-store");
        response.closeHandler(v -> run.abort(new ExportException("the client closed the connection")));
        run.writeTo(response).onComplete(done -> {
            inFlight.decrementAndGet();
            if (done.succeeded()) {
                LOG.info("export done [tenant: {}, rows: {}, bytes: {}]", tenantId, run.rowsRead(), run.bytesOut());
                response.end();
                return;
            }
            String errorId = UUID.randomUUID().toString().substring(0, 8);
            if (done.cause() instanceof ExportException gone) {
                // The client's doing (it left or stopped reading), not the server's.
                LOG.warn("export stopped [tenant: {}, error id: {}, rows: {}, bytes: {}]: {}", tenantId, errorId,
                        run.rowsRead(), run.bytesOut(), gone.getMessage());
            } else {
                LOG.error("export failed [tenant: {}, error id: {}, rows: {}, bytes: {}]", tenantId, errorId,
                        run.rowsRead(), run.bytesOut(), done.cause());
            }
            // Without the last chunk the download fails on the client's side, whatever it reads with.
            if (ctx.request().version() == HttpVersion.HTTP_2) {
                response.reset();
            } else {
                ctx.request().connection().close();
            }
        });
    }
}
