package io.clawfleet.shared.security;

import javax.crypto.AEADBadTagException;
import javax.crypto.Cipher;
import javax.crypto.SecretKey;
import javax.crypto.spec.GCMParameterSpec;
import javax.crypto.spec.SecretKeySpec;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.security.GeneralSecurityException;
import java.security.SecureRandom;
import java.util.Objects;

/**
 * AES-256-GCM with a random 96-bit nonce per message and associated data that binds a ciphertext to
 * where it belongs (tenant, purpose, key id): moved to another tenant or field, it no longer opens.
 * Layout of a sealed box: {@code version (1 byte) | nonce (12) | ciphertext and 128-bit tag}.
 */
public final class SecretBox {

    public static final int KEY_BYTES = 32;
    static final byte VERSION = 1;
    private static final int NONCE_BYTES = 12;
    private static final int TAG_BITS = 128;
    private static final SecureRandom RANDOM = new SecureRandom();

    private SecretBox() {
    }

    /** A new random 256-bit key. */
    public static byte[] newKey() {
        byte[] key = new byte[KEY_BYTES];
        RANDOM.nextBytes(key);
        return key;
    }

    public static SecretKey key(byte[] raw) {
        if (raw.length != KEY_BYTES) {
            throw new IllegalArgumentException("expected a " + KEY_BYTES + "-byte key, got " + raw.length + " bytes");
        }
        return new SecretKeySpec(raw, "AES");
    }

    /** Associated data from its parts, unambiguous (length-prefixed), so "a|b" + "c" differs from "a" + "b|c". */
    public static byte[] aad(String... parts) {
        int size = 0;
        byte[][] encoded = new byte[parts.length][];
        for (int i = 0; i < parts.length; i++) {
            encoded[i] = Objects.requireNonNull(parts[i]).getBytes(StandardCharsets.UTF_8);
            size += 4 + encoded[i].length;
        }
        ByteBuffer out = ByteBuffer.allocate(size);
        for (byte[] part : encoded) {
            out.putInt(part.length).put(part);
        }
        return out.array();
    }

    public static byte[] seal(SecretKey key, byte[] plaintext, byte[] aad) {
        byte[] nonce = new byte[NONCE_BYTES];
        RANDOM.nextBytes(nonce);
        try {
            Cipher cipher = Cipher.getInstance("AES/GCM/NoPadding");
            cipher.init(Cipher.ENCRYPT_MODE, key, new GCMParameterSpec(TAG_BITS, nonce));
            cipher.updateAAD(aad);
            byte[] sealed = cipher.doFinal(plaintext);
            return ByteBuffer.allocate(1 + NONCE_BYTES + sealed.length).put(VERSION).put(nonce).put(sealed).array();
        } catch (GeneralSecurityException e) {
            throw new IllegalStateException("AES-GCM is not available in this JVM", e);
        }
    }

    /**
     * Opens a sealed box.
     *
     * @throws SecretException when the key is not the one it was sealed with, the associated data differs
     *                         (another tenant, another field) or the bytes were changed
     */
    public static byte[] open(SecretKey key, byte[] sealed, byte[] aad) {
        if (sealed == null || sealed.length < 1 + NONCE_BYTES + TAG_BITS / 8 || sealed[0] != VERSION) {
            throw new SecretException("not a sealed secret of a known version");
        }
        try {
            Cipher cipher = Cipher.getInstance("AES/GCM/NoPadding");
            cipher.init(Cipher.DECRYPT_MODE, key, new GCMParameterSpec(TAG_BITS, sealed, 1, NONCE_BYTES));
            cipher.updateAAD(aad);
            return cipher.doFinal(sealed, 1 + NONCE_BYTES, sealed.length - 1 - NONCE_BYTES);
        } catch (AEADBadTagException e) {
            throw new SecretException("the secret does not open with this key for this place (wrong key, another tenant "
                    + "or field, or changed bytes)");
        } catch (GeneralSecurityException e) {
            throw new IllegalStateException("AES-GCM is not available in this JVM", e);
        }
    }
}
