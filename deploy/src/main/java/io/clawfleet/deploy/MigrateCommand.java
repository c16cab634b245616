package io.clawfleet.deploy;

import io.clawfleet.shared.config.ClawfleetConfig;
import io.clawfleet.shared.config.ConfigLoader;
import io.clawfleet.shared.db.DbUrl;
import io.clawfleet.shared.db.Migrations;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

import java.nio.file.Path;
import java.util.Map;
import java.util.concurrent.Callable;

/** Applies the schema to the database named by CLAWFLEET_DB_URL and exits. */
@Command(name = "migrate", mixinStandardHelpOptions = true,
        description = "Apply schema migrations to CLAWFLEET_DB_URL and create the cluster's partitions if new.")
final class MigrateCommand implements Callable<Integer> {

    @Option(names = "--config", description = "YAML config file (env CLAWFLEET_CONFIG).")
    Path config;

    @Override
    public Integer call() {
        ClawfleetConfig cfg = ConfigLoader.load(config, Map.of());
        if (cfg.db().url() == null) {
            System.err.println("clawfleet migrate: set CLAWFLEET_DB_URL=postgresql://user:password@host:port/database");
            return 2;
        }
        DbUrl url = DbUrl.parse(cfg.db().url());
        int partitions = Migrations.apply(url, cfg.partitions(), true);
        System.out.println("schema is current on " + url.redacted() + " (" + partitions + " partitions)");
        return 0;
    }
}
