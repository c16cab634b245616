package io.clawfleet.deploy;

import io.clawfleet.shared.db.DbUrl;
import io.clawfleet.shared.security.MasterKeys;
import io.clawfleet.shared.security.SecretException;
import io.clawfleet.shared.security.TenantKeys;

import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;

/**
 * Re-wraps every tenant's data key under a new master key, straight in the database (as {@code migrate} works):
 * the data keys themselves, and so every sealed secret, stay as they are. Nodes keep serving meanwhile, since
 * they hold both keys during a rotation and unwrap by the key id each row names.
 */
final class MasterKeyRotation {

    /** What a rotation did. */
    record Result(int rewrapped, int alreadyCurrent) {
    }

    private record Row(String tenantId, int keyId, byte[] wrapped, String masterKeyId) {
    }

    private static final int MAX_PASSES = 5;

    private final DbUrl url;
    private final MasterKeys known;
    private final MasterKeys.MasterKey target;

    /**
     * @param known  every key that may unwrap the stored data keys (the node's configured keys and the new file's)
     * @param target the new master key
     */
    MasterKeyRotation(DbUrl url, MasterKeys known, MasterKeys.MasterKey target) {
        this.url = Objects.requireNonNull(url);
        this.known = Objects.requireNonNull(known);
        this.target = Objects.requireNonNull(target);
    }

    /**
     * Re-wraps, one transaction per pass: every data key not under the target is locked, unwrapped and wrapped
     * again; if any does not unwrap, nothing of that pass is written and the error names the key id missing. A
     * pass after the first catches data keys a node made under the old key meanwhile.
     */
    Result run() throws SQLException {
        int rewrapped = 0;
        try (Connection connection = DriverManager.getConnection(url.jdbcUrl(), url.user() == null ? "postgres" : url.user(),
                url.password())) {
            connection.setAutoCommit(false);
            for (int pass = 0; pass < MAX_PASSES; pass++) {
                int done = pass(connection);
                rewrapped += done;
                if (done == 0) {
                    return new Result(rewrapped, count(connection));
                }
            }
        }
        throw new SecretException("data keys under an old master key kept appearing after " + MAX_PASSES + " passes: give "
                + "every node the new key as its current one (first in CLAWFLEET_MASTER_KEY_FILE, or CLAWFLEET_MASTER_KEY) "
                + "and run this again");
    }

    private int pass(Connection connection) throws SQLException {
        List<Row> rows = new ArrayList<>();
        try (PreparedStatement select = connection.prepareStatement("""
                SELECT tenant_id, key_id, wrapped_key, master_key_id FROM tenant_data_keys
                 WHERE master_key_id <> ? ORDER BY tenant_id, key_id FOR UPDATE""")) {
            select.setString(1, target.id());
            try (ResultSet rs = select.executeQuery()) {
                while (rs.next()) {
                    rows.add(new Row(rs.getString(1), rs.getInt(2), rs.getBytes(3), rs.getString(4)));
                }
            }
        }
        try (PreparedStatement update = connection.prepareStatement("""
                UPDATE tenant_data_keys SET wrapped_key = ?, master_key_id = ?, rewrapped_at = now()
                 WHERE tenant_id = ? AND key_id = ? AND master_key_id = ?""")) {
            for (Row row : rows) {
                MasterKeys.MasterKey old = known.byId(row.masterKeyId()).orElseThrow(() -> new SecretException(
                        "the data key of tenant " + row.tenantId() + " is wrapped by master key " + row.masterKeyId()
                                + ", which was not given (given: " + known.ids() + "); set CLAWFLEET_MASTER_KEY, "
                                + "CLAWFLEET_MASTER_KEY_FILE or CLAWFLEET_MASTER_KEY_PREVIOUS to it. Nothing was changed"));
                byte[] raw = TenantKeys.unwrapWith(old, row.tenantId(), row.keyId(), row.wrapped()).getEncoded();
                update.setBytes(1, TenantKeys.wrap(target, row.tenantId(), row.keyId(), raw));
                java.util.Arrays.fill(raw, (byte) 0);
                update.setString(2, target.id());
                update.setString(3, row.tenantId());
                update.setInt(4, row.keyId());
                update.setString(5, row.masterKeyId());
                update.addBatch();
            }
            update.executeBatch();
            connection.commit();
        } catch (SQLException | RuntimeException e) {
            connection.rollback();
            throw e;
        }
        return rows.size();
    }

    private int count(Connection connection) throws SQLException {
        try (PreparedStatement select = connection.prepareStatement("SELECT count(*) FROM tenant_data_keys WHERE master_key_id = ?")) {
            select.setString(1, target.id());
            try (ResultSet rs = select.executeQuery()) {
                rs.next();
                int n = rs.getInt(1);
                connection.commit();
                return n;
            }
        }
    }
}
