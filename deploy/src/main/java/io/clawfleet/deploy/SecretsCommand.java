package io.clawfleet.deploy;

import io.clawfleet.shared.config.ClawfleetConfig;
import io.clawfleet.shared.config.ConfigLoader;
import io.clawfleet.shared.db.DbUrl;
import io.clawfleet.shared.security.MasterKeys;
import io.clawfleet.shared.security.SecretException;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.Callable;

/** Tenant secrets at rest: rotating the master key (docs/OPERATIONS.md). */
@Command(name = "secrets", mixinStandardHelpOptions = true, description = "Manage the encryption of tenant secrets.",
        subcommands = {SecretsCommand.RotateMaster.class})
final class SecretsCommand implements Runnable {

    @Override
    public void run() {
        new CommandLine(this).usage(System.out);
    }

    /**
     * {@code clawfleet secrets rotate-master --new-key-file F}: talks to the database directly, like {@code migrate}.
     * It needs the database and the master keys, which are the operator's, not a gateway's endpoint's: an HTTP
     * endpoint would carry a master key over the network and give the operator key the power to replace it.
     */
    @Command(name = "rotate-master", mixinStandardHelpOptions = true,
            description = "Re-wrap every tenant's data key under the first key of --new-key-file. The old key comes from "
                    + "CLAWFLEET_MASTER_KEY, CLAWFLEET_MASTER_KEY_FILE, CLAWFLEET_MASTER_KEY_PREVIOUS or the file's later lines.")
    static final class RotateMaster implements Callable<Integer> {

        @Option(names = "--new-key-file", required = true, description = "File whose first line is the new master key (base64 of 32 bytes).")
        Path newKeyFile;

        @Option(names = "--config", description = "YAML config file (env CLAWFLEET_CONFIG).")
        Path config;

        @Override
        public Integer call() throws Exception {
            ClawfleetConfig cfg = ConfigLoader.load(config, Map.of());
            if (cfg.db().url() == null) {
                System.err.println("clawfleet secrets rotate-master: set CLAWFLEET_DB_URL=postgresql://user:password@host:port/database");
                return 2;
            }
            try {
                return rotate(DbUrl.parse(cfg.db().url()), cfg.security().masterKeys(), newKeyFile);
            } catch (SecretException e) {
                System.err.println("clawfleet secrets rotate-master: " + e.getMessage());
                return 1;
            }
        }

        static int rotate(DbUrl url, MasterKeys configured, Path newKeyFile) throws Exception {
            List<MasterKeys.MasterKey> fromFile = MasterKeys.readFile(newKeyFile);
            MasterKeys.MasterKey target = fromFile.getFirst();
            List<MasterKeys.MasterKey> known = new ArrayList<>(fromFile);
            configured.ids().forEach(id -> known.add(configured.byId(id).orElseThrow()));
            MasterKeyRotation.Result result = new MasterKeyRotation(url, MasterKeys.of(known), target).run();
            System.out.println("re-wrapped " + result.rewrapped() + " tenant data keys under master key " + target.id() + "; "
                    + result.alreadyCurrent() + " data keys are under it now. Once every node has " + target.id()
                    + " as its current key, the old key may be removed from their configuration (keep a backup of it "
                    + "with your database backups that are older than this rotation).");
            return 0;
        }
    }
}
