package io.clawfleet.shared.security;

import javax.crypto.SecretKey;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.ArrayList;
import java.util.Base64;
import java.util.HexFormat;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;

/**
 * The master keys a node holds: the current one wraps new tenant data keys, the others (previous keys, during
 * a rotation) only unwrap. A key's id is derived from the key itself ({@code mk-} and 12 hex digits of a
 * SHA-256), so rows name the key that wraps them and a wrong key is told apart from a damaged row.
 */
public final class MasterKeys {

    /** One master key and its id. */
    public record MasterKey(String id, SecretKey key) {
        @Override
        public String toString() {
            return "MasterKey[" + id + "]";
        }
    }

    private static final MasterKeys NONE = new MasterKeys(List.of());

    private final Map<String, MasterKey> byId = new LinkedHashMap<>();
    private final MasterKey current;

    private MasterKeys(List<MasterKey> keys) {
        keys.forEach(k -> byId.putIfAbsent(k.id(), k));
        current = keys.isEmpty() ? null : keys.getFirst();
    }

    public static MasterKeys none() {
        return NONE;
    }

    /** The current key first, then the keys accepted for unwrapping only. */
    public static MasterKeys of(List<MasterKey> keys) {
        return new MasterKeys(List.copyOf(keys));
    }

    /**
     * The keys configured: {@code masterKey} (else the first key of {@code masterKeyFile}) is current; the
     * file's other keys and {@code masterKeyPrevious} are accepted for unwrapping.
     *
     * @throws SecretException naming the setting that is wrong
     */
    public static MasterKeys configured(String masterKey, Path masterKeyFile, List<String> previous) {
        List<MasterKey> keys = new ArrayList<>();
        if (masterKey != null) {
            keys.add(decode(masterKey, "CLAWFLEET_MASTER_KEY (masterKey)"));
        }
        if (masterKeyFile != null) {
            keys.addAll(readFile(masterKeyFile));
        }
        for (String key : previous) {
            keys.add(decode(key, "CLAWFLEET_MASTER_KEY_PREVIOUS (masterKeyPrevious)"));
        }
        if (keys.isEmpty()) {
            return NONE;
        }
        if (masterKey == null && masterKeyFile == null) {
            throw new SecretException("CLAWFLEET_MASTER_KEY_PREVIOUS is set but there is no current master key: set "
                    + "CLAWFLEET_MASTER_KEY or CLAWFLEET_MASTER_KEY_FILE too");
        }
        return of(keys);
    }

    /** The keys of a key file: one base64 key a line, the first current; blank lines and {@code #} comments skipped. */
    public static List<MasterKey> readFile(Path file) {
        List<String> lines;
        try {
            lines = Files.readAllLines(file, StandardCharsets.UTF_8);
        } catch (IOException e) {
            throw new SecretException("the master key file " + file + " (CLAWFLEET_MASTER_KEY_FILE) cannot be read: " + e);
        }
        List<MasterKey> keys = new ArrayList<>();
        for (String line : lines) {
            String stripped = line.strip();
            if (!stripped.isEmpty() && !stripped.startsWith("#")) {
                keys.add(decode(stripped, "the master key file " + file));
            }
        }
        if (keys.isEmpty()) {
            throw new SecretException("the master key file " + file + " (CLAWFLEET_MASTER_KEY_FILE) holds no key");
        }
        return keys;
    }

    /** A key from its base64 form (standard or URL-safe); it must be 32 bytes. */
    public static MasterKey decode(String base64, String where) {
        byte[] raw;
        try {
            raw = base64.contains("-") || base64.contains("_") ? Base64.getUrlDecoder().decode(base64.strip())
                    : Base64.getDecoder().decode(base64.strip());
        } catch (IllegalArgumentException e) {
            throw new SecretException(where + " is not base64; expected the base64 of 32 random bytes (openssl rand -base64 32)");
        }
        if (raw.length != SecretBox.KEY_BYTES) {
            throw new SecretException(where + " must be the base64 of 32 random bytes (openssl rand -base64 32), got "
                    + raw.length + " bytes");
        }
        return new MasterKey(idOf(raw), SecretBox.key(raw));
    }

    /** A new random key, in the form a key file or CLAWFLEET_MASTER_KEY holds. */
    public static String generate() {
        return Base64.getEncoder().encodeToString(SecretBox.newKey());
    }

    static String idOf(byte[] raw) {
        try {
            MessageDigest sha = MessageDigest.getInstance("SHA-256");
            sha.update("clawfleet master key id\0".getBytes(StandardCharsets.UTF_8));
            return "mk-" + HexFormat.of().formatHex(sha.digest(raw), 0, 6);
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException(e);
        }
    }

    public boolean isEmpty() {
        return current == null;
    }

    /** The key that wraps new data keys. */
    public MasterKey current() {
        if (current == null) {
            throw new SecretException("no master key is configured: set CLAWFLEET_MASTER_KEY (the base64 of 32 random "
                    + "bytes) or CLAWFLEET_MASTER_KEY_FILE to store tenant secrets");
        }
        return current;
    }

    public Optional<MasterKey> byId(String id) {
        return Optional.ofNullable(byId.get(id));
    }

    /** The keys as they may be written (base64, standard and URL-safe), for the secret scrubber. */
    public List<String> encodedForms() {
        List<String> forms = new ArrayList<>();
        for (MasterKey key : byId.values()) {
            byte[] raw = key.key().getEncoded();
            forms.add(Base64.getEncoder().encodeToString(raw));
            forms.add(Base64.getUrlEncoder().withoutPadding().encodeToString(raw));
        }
        return forms;
    }

    public List<String> ids() {
        return List.copyOf(byId.keySet());
    }

    @Override
    public String toString() {
        return "MasterKeys" + ids();
    }
}
