package io.clawfleet.sandbox.exec;

import java.util.ArrayList;
import java.util.List;

/**
 * Splits a {@code shell_exec} command into the program and its arguments, the way a POSIX shell
 * would split words, and nothing more (seed 000 §12.4): single and double quotes and backslashes
 * group and escape; no variable, glob, tilde or command substitution happens, and the control
 * operators of a shell (pipes, redirects, {@code ;}, {@code &}, {@code `}, {@code $(}) are refused
 * unless quoted, so a command can never be more than one program run directly.
 */
public final class CommandLine {

    public static final int MAX_LENGTH = 16_384;
    public static final int MAX_ARGUMENTS = 1_024;

    private CommandLine() {
    }

    /**
     * @throws IllegalArgumentException saying what is wrong, in words a model can act on
     */
    public static List<String> parse(String command) {
        if (command == null || command.isBlank()) {
            throw new IllegalArgumentException("the command is empty");
        }
        if (command.length() > MAX_LENGTH) {
            throw new IllegalArgumentException("the command is longer than " + MAX_LENGTH + " characters");
        }
        List<String> words = new ArrayList<>();
        StringBuilder word = new StringBuilder();
        boolean inWord = false;
        int i = 0;
        while (i < command.length()) {
            char c = command.charAt(i);
            if (c == 0) {
                throw new IllegalArgumentException("the command contains a NUL character");
            }
            if (Character.isWhitespace(c)) {
                if (inWord) {
                    words.add(word.toString());
                    word.setLength(0);
                    inWord = false;
                }
                i++;
                continue;
            }
            inWord = true;
            switch (c) {
                case '\'' -> i = singleQuoted(command, i + 1, word);
                case '"' -> i = doubleQuoted(command, i + 1, word);
                case '\\' -> {
                    if (i + 1 >= command.length()) {
                        throw new IllegalArgumentException("the command ends with a lone backslash");
                    }
                    word.append(command.charAt(i + 1));
                    i += 2;
                }
                case '|', ';', '&', '<', '>', '`' -> throw operator(String.valueOf(c));
                case '$' -> {
                    if (i + 1 < command.length() && (command.charAt(i + 1) == '(' || command.charAt(i + 1) == '{')) {
                        throw operator("$" + command.charAt(i + 1));
                    }
                    word.append(c);
                    i++;
                }
                default -> {
                    word.append(c);
                    i++;
                }
            }
        }
        if (inWord) {
            words.add(word.toString());
        }
        if (words.isEmpty()) {
            throw new IllegalArgumentException("the command is empty");
        }
        if (words.size() > MAX_ARGUMENTS) {
            throw new IllegalArgumentException("the command has more than " + MAX_ARGUMENTS + " arguments");
        }
        return List.copyOf(words);
    }

    private static int singleQuoted(String command, int from, StringBuilder word) {
        int end = command.indexOf('\'', from);
        if (end < 0) {
            throw new IllegalArgumentException("a single quote (') is not closed");
        }
        word.append(command, from, end);
        return end + 1;
    }

    private static int doubleQuoted(String command, int from, StringBuilder word) {
        int i = from;
        while (i < command.length()) {
            char c = command.charAt(i);
            if (c == '"') {
                return i + 1;
            }
            // Inside double quotes a backslash escapes only these, as in a POSIX shell.
            if (c == '\\' && i + 1 < command.length() && "\"\\$`".indexOf(command.charAt(i + 1)) >= 0) {
                word.append(command.charAt(i + 1));
                i += 2;
            } else {
                word.append(c);
                i++;
            }
        }
        throw new IllegalArgumentException("a double quote (\") is not closed");
    }

    private static IllegalArgumentException operator(String operator) {
        return new IllegalArgumentException("'" + operator + "' is shell syntax, and shell_exec runs one program directly, "
                + "without a shell: pipes, redirects, ';', '&&', '`' and '$(...)' are not available (quote the character "
                + "to pass it as text)");
    }
}
