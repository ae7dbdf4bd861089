// Drives dialtone's JSON-RPC interface with the official callr Java SDK (THECALLR/sdk-java),
// unchanged: it requires an https URL, trusted the usual way (javax.net.ssl.trustStore).
//
// Usage: java -cp SDK:gson:commons-codec:. CallrSdk URL LOGIN PASSWORD < {"plan", "vars"}
// Prints one JSON object: step name -> {"result"} | {"error": {"code", "message"}} | {"skipped"}.

import com.callr.Api;
import com.callr.auth.LoginPasswordAuth;
import com.callr.exceptions.CallrException;
import com.google.gson.GsonBuilder;
import com.google.gson.JsonArray;
import com.google.gson.JsonElement;
import com.google.gson.JsonObject;
import com.google.gson.JsonParser;
import com.google.gson.JsonPrimitive;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

public class CallrSdk {
    private static final Pattern WHOLE = Pattern.compile("^\\{\\{([^}]+)\\}\\}$");
    private static final Pattern PART = Pattern.compile("\\{\\{([^}]+)\\}\\}");
    private static final JsonObject ENV = new JsonObject();

    static class Missing extends Exception {
        Missing(String path) { super(path); }
    }

    static JsonElement lookup(String path) throws Missing {
        JsonElement value = ENV;
        for (String part : path.split("\\.")) {
            if (value != null && value.isJsonObject() && value.getAsJsonObject().has(part)) {
                value = value.getAsJsonObject().get(part);
            } else if (value != null && value.isJsonArray() && part.matches("\\d+")
                    && Integer.parseInt(part) < value.getAsJsonArray().size()) {
                value = value.getAsJsonArray().get(Integer.parseInt(part));
            } else {
                throw new Missing(path);
            }
        }
        return value;
    }

    static JsonElement fill(JsonElement value) throws Missing {
        if (value.isJsonPrimitive() && value.getAsJsonPrimitive().isString()) {
            String s = value.getAsString();
            Matcher whole = WHOLE.matcher(s);
            if (whole.matches()) {
                return lookup(whole.group(1));
            }
            Matcher m = PART.matcher(s);
            StringBuilder out = new StringBuilder();
            while (m.find()) {
                JsonElement v = lookup(m.group(1));
                m.appendReplacement(out, Matcher.quoteReplacement(
                    v.isJsonPrimitive() ? v.getAsString() : v.toString()));
            }
            m.appendTail(out);
            return new JsonPrimitive(out.toString());
        }
        if (value.isJsonArray()) {
            JsonArray out = new JsonArray();
            for (JsonElement e : value.getAsJsonArray()) {
                out.add(fill(e));
            }
            return out;
        }
        if (value.isJsonObject()) {
            JsonObject out = new JsonObject();
            for (Map.Entry<String, JsonElement> e : value.getAsJsonObject().entrySet()) {
                out.add(e.getKey(), fill(e.getValue()));
            }
            return out;
        }
        return value;
    }

    public static void main(String[] args) throws Exception {
        String url = args[0], login = args[1], password = args[2];
        JsonObject request = JsonParser.parseReader(
            new InputStreamReader(System.in, StandardCharsets.UTF_8)).getAsJsonObject();
        ENV.add("vars", request.get("vars"));
        JsonObject out = new JsonObject();
        for (JsonElement s : request.getAsJsonArray("plan")) {
            JsonObject step = s.getAsJsonObject();
            String name = step.get("name").getAsString();
            ArrayList<JsonElement> params = new ArrayList<>();
            String loginAsTarget = null;
            try {
                for (JsonElement p : step.getAsJsonArray("params")) {
                    params.add(fill(p));
                }
                if (step.has("login_as")) {
                    loginAsTarget = fill(step.getAsJsonObject("login_as").get("target")).getAsString();
                }
            } catch (Missing e) {
                JsonObject skipped = new JsonObject();
                skipped.addProperty("skipped", "needs " + e.getMessage());
                out.add(name, skipped);
                continue;
            }
            boolean wrong = step.has("wrong_password") && step.get("wrong_password").getAsBoolean();
            Api api = new Api(new LoginPasswordAuth(login, password + (wrong ? "x" : "")), null);
            api.setApiUrl(url + "/json-rpc/v1.1/");
            JsonObject answer = new JsonObject();
            try {
                if (loginAsTarget != null) {
                    api.setLoginAs(step.getAsJsonObject("login_as").get("type").getAsString(), loginAsTarget);
                }
                JsonElement result = api.send(step.get("method").getAsString(), params);
                ENV.add(name, result);
                answer.add("result", result);
            } catch (CallrException e) {
                JsonObject error = new JsonObject();
                error.addProperty("code", e.code);
                error.addProperty("message", e.getMessage());
                answer.add("error", error);
            }
            out.add(name, answer);
        }
        System.out.print(new GsonBuilder().serializeNulls().create().toJson(out));
    }
}
