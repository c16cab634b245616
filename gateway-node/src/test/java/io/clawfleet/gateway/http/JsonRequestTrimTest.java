package io.clawfleet.gateway.http;

import io.vertx.core.buffer.Buffer;
import io.vertx.core.json.Json;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import org.junit.jupiter.api.Test;

import java.util.Random;

import static org.assertj.core.api.Assertions.assertThat;

/** {@link JsonRequest.Trimmed}: a body's array cut to its last element decodes as the whole body would, less the rest. */
class JsonRequestTrimTest {

    private static JsonRequest.Trimmed trim(String body, String array) {
        return JsonRequest.Trimmed.of(Buffer.buffer(body), array);
    }

    /** What the whole body decodes to, with the array replaced by its last element. */
    private static JsonObject expected(String body, String array) {
        JsonObject whole = (JsonObject) Json.decodeValue(body);
        if (whole.getValue(array) instanceof JsonArray elements && elements.size() > 1) {
            whole.put(array, new JsonArray().add(elements.getValue(elements.size() - 1)));
        }
        return whole;
    }

    @Test
    void aLongConversationKeepsOnlyItsLastMessageAndCountsTheRest() {
        JsonArray messages = new JsonArray();
        for (int i = 0; i < 200; i++) {
            messages.add(new JsonObject().put("role", i % 2 == 0 ? "user" : "assistant")
                    .put("content", "message ] [ } { \" \\ , " + i + " \u00e9\ud83d\ude00"));
        }
        String body = new JsonObject().put("model", "default").put("messages", messages).put("stream", true).encode();
        JsonRequest.Trimmed trimmed = trim(body, "messages");
        assertThat(trimmed.dropped()).isEqualTo(199);
        assertThat(trimmed.body().length()).isLessThan(200);
        assertThat(Json.decodeValue(trimmed.body())).isEqualTo(expected(body, "messages"));
    }

    @Test
    void whitespaceCommentsAndNestingAroundTheElementsAreKeptOrSkippedAsJson() {
        // Vert.x's parser accepts comments; the cut must keep whatever it accepted around the last element
        String body = "{ \"messages\" : [ {\"a\": [1, [2, {\"b\": \"]\"}]]} , /* c */ \"x\" ,\n"
                + "  {\"role\": \"user\", \"content\": [{\"type\": \"text\", \"text\": \"hi\"}]} // end\n ] , \"n\": 1 }";
        JsonRequest.Trimmed trimmed = trim(body, "messages");
        assertThat(trimmed.dropped()).isEqualTo(2);
        assertThat(Json.decodeValue(trimmed.body())).isEqualTo(expected(body, "messages"));
    }

    @Test
    void aRepeatedFieldCountsAsTheDecodedObjectDoes() {
        String lastShort = "{\"messages\":[1,2,3],\"messages\":[4]}";
        assertThat(trim(lastShort, "messages").dropped()).isZero();
        assertThat(Json.decodeValue(trim(lastShort, "messages").body())).isEqualTo(expected(lastShort, "messages"));
        String lastLong = "{\"messages\":\"no\",\"messages\":[4,5,6]}";
        assertThat(trim(lastLong, "messages").dropped()).isEqualTo(2);
        assertThat(Json.decodeValue(trim(lastLong, "messages").body())).isEqualTo(expected(lastLong, "messages"));
        String thenNotArray = "{\"messages\":[4,5,6],\"messages\":7}";
        assertThat(trim(thenNotArray, "messages").dropped()).isZero();
        assertThat(Json.decodeValue(trim(thenNotArray, "messages").body())).isEqualTo(expected(thenNotArray, "messages"));
    }

    @Test
    void onlyTheTopLevelArrayIsCutAndShortOnesAreLeftAsTheyAre() {
        String nested = "{\"other\":{\"messages\":[1,2,3]},\"messages\":[]}";
        JsonRequest.Trimmed trimmed = trim(nested, "messages");
        assertThat(trimmed.body().toString()).isEqualTo(nested);
        assertThat(trimmed.dropped()).isZero();
        String one = "{\"messages\":[{\"role\":\"user\",\"content\":\"x\"}]}";
        assertThat(trim(one, "messages").body().toString()).isEqualTo(one);
    }

    @Test
    void aBodyThatIsNotValidJsonAnywhereIsLeftToTheWholeDecode() {
        // the error is in an element that is skipped: tokenizing it still finds it
        assertThat(trim("{\"messages\":[{\"role\":user},{\"role\":\"user\"}]}", "messages")).isNull();
        assertThat(trim("{\"messages\":[1,,2]}", "messages")).isNull();
        assertThat(trim("{\"messages\":[1,2,]}", "messages")).isNull();
        assertThat(trim("{\"messages\":[1,2", "messages")).isNull();
        assertThat(trim("[1,2]", "messages")).isNull();
        assertThat(trim("", "messages")).isNull();
    }

    @Test
    void randomBodiesDecodeAsTheWholeBodyLessTheCutElements() {
        Random random = new Random(19);
        for (int round = 0; round < 500; round++) {
            JsonObject body = new JsonObject();
            int fields = random.nextInt(5);
            for (int f = 0; f < fields; f++) {
                body.put("f" + random.nextInt(4), value(random, 3));
            }
            JsonArray messages = new JsonArray();
            int count = random.nextInt(6);
            for (int m = 0; m < count; m++) {
                messages.add(value(random, 3));
            }
            body.put("messages", messages);
            body.put("after", value(random, 2));
            String text = random.nextBoolean() ? body.encode() : body.encodePrettily();
            JsonRequest.Trimmed trimmed = trim(text, "messages");
            assertThat(trimmed.dropped()).as(text).isEqualTo(Math.max(0, count - 1));
            assertThat(Json.decodeValue(trimmed.body())).as(text).isEqualTo(expected(text, "messages"));
        }
    }

    private static Object value(Random random, int depth) {
        int kind = random.nextInt(depth > 0 ? 8 : 6);
        return switch (kind) {
            case 0 -> null;
            case 1 -> random.nextBoolean();
            case 2 -> random.nextLong();
            case 3 -> random.nextDouble();
            case 4 -> "s\"]}" + random.nextInt(100) + "\\,[{";
            case 5 -> "";
            case 6 -> {
                JsonArray array = new JsonArray();
                for (int i = random.nextInt(4); i > 0; i--) {
                    array.add(value(random, depth - 1));
                }
                yield array;
            }
            default -> {
                JsonObject object = new JsonObject();
                for (int i = random.nextInt(4); i > 0; i--) {
                    object.put("k" + random.nextInt(10), value(random, depth - 1));
                }
                yield object;
            }
        };
    }
}
