package io.clawfleet.deploy;

import io.clawfleet.deploy.certs.ClusterCa;
import io.clawfleet.shared.cluster.ClusterTls;
import io.clawfleet.shared.config.ClawfleetConfig.Role;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

import java.nio.file.Files;
import java.nio.file.Path;
import java.security.cert.X509Certificate;
import java.time.Duration;
import java.util.ArrayList;
import java.util.EnumSet;
import java.util.List;
import java.util.Locale;
import java.util.Set;
import java.util.concurrent.Callable;

/** The cluster CA and the nodes' event-bus certificates (docs/SECURITY.md#cluster-transport). */
@Command(name = "certs", mixinStandardHelpOptions = true,
        description = "Make the cluster CA and the node certificates the event bus needs (mutual TLS).",
        subcommands = {CertsCommand.Init.class, CertsCommand.Issue.class, CertsCommand.Rotate.class})
final class CertsCommand implements Runnable {

    @Override
    public void run() {
        new CommandLine(this).usage(System.out);
    }

    static Set<Role> roles(String list) {
        Set<Role> roles = EnumSet.noneOf(Role.class);
        for (String name : list.split(",")) {
            String id = name.trim().toLowerCase(Locale.ROOT);
            if (id.isEmpty()) {
                continue;
            }
            try {
                roles.add(Role.valueOf(id.toUpperCase(Locale.ROOT)));
            } catch (IllegalArgumentException e) {
                throw new CommandLine.ParameterException(new CommandLine(new CertsCommand()),
                        "unknown role '" + name.trim() + "' (gateway, worker, sandbox, scheduler)");
            }
        }
        if (roles.isEmpty()) {
            throw new CommandLine.ParameterException(new CommandLine(new CertsCommand()),
                    "name at least one role (gateway, worker, sandbox, scheduler)");
        }
        return roles;
    }

    static Duration days(int days) {
        if (days < 1 || days > 36_500) {
            throw new CommandLine.ParameterException(new CommandLine(new CertsCommand()), "--days must be 1 to 36500, got " + days);
        }
        return Duration.ofDays(days);
    }

    /** Opens the CA in {@code dir}, saying so when a folder from an earlier version was given its sandbox CA. */
    static ClusterCa open(Path dir) {
        ClusterCa ca = ClusterCa.open(dir);
        if (ca.madeSandboxCa()) {
            System.out.println("made the sandbox nodes' CA in " + dir.resolve(ClusterCa.SANDBOX_CA_CERT) + " (this folder is from an "
                    + "earlier version): issue every sandbox node's certificate again (clawfleet certs issue --dir " + dir
                    + " --name <node> --roles sandbox, or clawfleet certs rotate --dir " + dir + " --reissue), then restart every "
                    + "node with its folder's new ca.crt; until then gateways still accept the old sandbox certificates");
        }
        return ca;
    }

    static void describe(Path node) {
        X509Certificate leaf = ClusterTls.certificates(node.resolve(ClusterTls.CERT_FILE)).get(0);
        System.out.println(node + ": roles " + ClusterTls.rolesOf(leaf).stream().map(Role::id).sorted().toList()
                + ", valid until " + leaf.getNotAfter().toInstant());
    }

    @Command(name = "init", mixinStandardHelpOptions = true,
            description = "Make a cluster CA in --dir (the root, the workers' and the sandbox nodes' CAs, the trust files) and, with --issue, one node certificate per role.")
    static final class Init implements Callable<Integer> {
        @Option(names = "--dir", required = true, description = "Folder of the CA; keep ca.key off the nodes.")
        Path dir;

        @Option(names = "--cluster-name", defaultValue = "clawfleet", description = "Named in the CA's subject (default: ${DEFAULT-VALUE}).")
        String clusterName;

        @Option(names = "--days", defaultValue = "3650", description = "Life of the CA in days (default: ${DEFAULT-VALUE}).")
        int days;

        @Option(names = "--issue", description = "Comma list of roles: issue DIR/<role>/ with a certificate carrying that role.")
        String issue;

        @Option(names = "--node-days", defaultValue = "397", description = "Life of the issued node certificates (default: ${DEFAULT-VALUE}).")
        int nodeDays;

        @Option(names = "--if-missing", description = "Keep a CA and node folders that exist (for a set-up step that runs on every start).")
        boolean ifMissing;

        @Override
        public Integer call() {
            ClusterCa ca;
            if (ClusterCa.exists(dir) && ifMissing) {
                ca = open(dir);
                System.out.println("kept the CA in " + dir);
            } else {
                ca = ClusterCa.create(dir, clusterName, days(days));
                System.out.println("made a CA in " + dir + " (" + ca.certificate().getSubjectX500Principal().getName()
                        + "); keep " + dir.resolve(ClusterCa.CA_KEY) + " off the nodes");
            }
            if (issue != null) {
                for (Role role : roles(issue)) {
                    Path node = dir.resolve(role.id());
                    // A sandbox folder kept from before the sandbox CA is issued again: its old certificate, from the root,
                    // would still get a connection to gateways.
                    if (ifMissing && Files.exists(node.resolve(ClusterTls.CERT_FILE)) && !(ca.madeSandboxCa() && role == Role.SANDBOX)) {
                        System.out.println("kept " + node);
                        continue;
                    }
                    describe(ca.issue(role.id(), Set.of(role), List.of(), days(nodeDays)));
                }
            }
            return 0;
        }
    }

    @Command(name = "issue", mixinStandardHelpOptions = true,
            description = "Issue a node certificate into DIR/<name>/ (tls.crt, tls.key, ca.crt: what CLAWFLEET_CLUSTER_TLS_DIR names).")
    static final class Issue implements Callable<Integer> {
        @Option(names = "--dir", required = true, description = "Folder of the CA.")
        Path dir;

        @Option(names = "--name", required = true, description = "The node (or role) the certificate is for; its folder's name.")
        String name;

        @Option(names = "--roles", required = true, description = "Comma list of the roles the node carries.")
        String roles;

        @Option(names = "--host", split = ",", description = "DNS names or IP addresses to add to the certificate (informational).")
        List<String> hosts = new ArrayList<>();

        @Option(names = "--days", defaultValue = "397", description = "Life in days (default: ${DEFAULT-VALUE}).")
        int days;

        @Override
        public Integer call() {
            describe(open(dir).issue(name, roles(roles), hosts, days(days)));
            return 0;
        }
    }

    @Command(name = "rotate", mixinStandardHelpOptions = true,
            description = {"Replace the CA without downtime, in three steps, each followed by a rolling restart of the nodes:",
                    "  rotate            new CA; every node folder's ca.crt trusts both",
                    "  rotate --reissue  every node certificate issued again by the new CA",
                    "  rotate --finish   the old CA dropped from every ca.crt"})
    static final class Rotate implements Callable<Integer> {
        @Option(names = "--dir", required = true, description = "Folder of the CA.")
        Path dir;

        @Option(names = "--cluster-name", defaultValue = "clawfleet", description = "Named in the new CA's subject.")
        String clusterName;

        @Option(names = "--days", defaultValue = "3650", description = "Life of the new CA (default: ${DEFAULT-VALUE}).")
        int days;

        @Option(names = "--node-days", defaultValue = "397", description = "With --reissue: life of the node certificates (default: ${DEFAULT-VALUE}).")
        int nodeDays;

        @Option(names = "--reissue", description = "Issue every node folder's certificate again from the current CA.")
        boolean reissue;

        @Option(names = "--finish", description = "Trust only the current CA.")
        boolean finish;

        @Override
        public Integer call() {
            if (reissue && finish) {
                throw new CommandLine.ParameterException(new CommandLine(this), "--reissue and --finish are separate steps");
            }
            if (reissue) {
                ClusterCa ca = open(dir);
                ca.reissueAll(days(nodeDays)).forEach(CertsCommand::describe);
                System.out.println("next: restart the nodes one by one, then: clawfleet certs rotate --dir " + dir + " --finish");
            } else if (finish) {
                open(dir).finishRotation();
                System.out.println("every ca.crt in " + dir + " now trusts the current CA only; restart the nodes one by one");
            } else {
                ClusterCa.rotate(dir, clusterName, days(days));
                System.out.println("made a new CA in " + dir + "; every ca.crt trusts the old and the new one. Next: restart the "
                        + "nodes one by one, then: clawfleet certs rotate --dir " + dir + " --reissue");
            }
            return 0;
        }
    }
}
