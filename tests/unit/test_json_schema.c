/* test_json_schema.c -- JSON schema to GBNF: for a table of schemas from simple to nested, the
 * converted grammar accepts instances that are valid under the schema and rejects invalid ones
 * (the expectations are written from the JSON Schema rules by hand); unsupported keywords and
 * malformed schemas are refused with their name. */
#include "ork_test.h"

#include <ork-engine/grammar.h>
#include <ork/alloc.h>
#include <ork/error.h>

#include <stdbool.h>

static bool accepts(const struct ork_grammar *g, const char *s)
{
    struct ork_grammar_matcher *m = NULL;
    if (ork_grammar_matcher_create(g, &m) < 0)
        return false;
    bool ok = ork_grammar_matcher_accept_bytes(m, s, strlen(s)) == 0 &&
              ork_grammar_matcher_can_end(m);
    ork_grammar_matcher_free(m);
    return ok;
}

struct schema_case {
    const char *schema;
    const char *valid[6];
    const char *invalid[6];
};

static const struct schema_case cases[] = {
    { "{\"type\": \"integer\"}", { "0", "-12", "123456" }, { "01", "1.5", "\"1\"", "" } },
    { "{\"type\": \"number\"}", { "0", "-1.25", "3e10", "2.5E-3" }, { ".5", "1.", "--1" } },
    { "{\"type\": \"boolean\"}", { "true", "false" }, { "True", "1", "null" } },
    { "{\"type\": \"null\"}", { "null" }, { "nil", "" } },
    { "{\"type\": \"string\"}", { "\"\"", "\"a b\"", "\"\\n\\u00e9\"", "\"\xc3\xa9\"" },
      { "\"a", "a", "\"\x01\"", "\"\\q\"" } },
    { "{\"type\": \"string\", \"minLength\": 2, \"maxLength\": 3}", { "\"ab\"", "\"abc\"" },
      { "\"a\"", "\"abcd\"" } },
    { "{\"enum\": [\"red\", 1, null, {\"a\": true}]}",
      { "\"red\"", "1", "null", "{\"a\":true}" }, { "\"blue\"", "2", "{\"a\": false}" } },
    { "{\"const\": \"fixed\"}", { "\"fixed\"" }, { "\"other\"" } },
    { "{\"type\": \"array\", \"items\": {\"type\": \"integer\"}, \"minItems\": 1, \"maxItems\": 3}",
      { "[1]", "[1, 2,3]", "[ 1 ,2 ]" }, { "[]", "[1,2,3,4]", "[\"a\"]", "[1,]" } },
    { "{\"type\": \"array\"}", { "[]", "[1, \"a\", [true], {\"k\": null}]" }, { "{}", "[" } },
    { "{\"type\": \"object\", \"properties\": {\"name\": {\"type\": \"string\"}, "
      "\"age\": {\"type\": \"integer\"}}, \"required\": [\"name\"]}",
      { "{\"name\": \"Al\"}", "{\"name\":\"Al\",\"age\":3}", "{ \"name\" : \"x\" , \"age\" : 1 }" },
      { "{}", "{\"age\": 3}", "{\"age\": 3, \"name\": \"Al\"}", "{\"name\": \"Al\", \"x\": 1}",
        "{\"name\": 3}" } },
    { "{\"type\": \"object\", \"properties\": {\"a\": {\"type\": \"integer\"}, "
      "\"b\": {\"type\": \"integer\"}}}",
      { "{}", "{\"a\": 1}", "{\"b\": 2}", "{\"a\": 1, \"b\": 2}" },
      { "{\"b\": 2, \"a\": 1}", "{,\"b\": 2}", "{\"a\": 1,}" } },
    { "{\"type\": \"object\"}", { "{}", "{\"x\": [1, {\"y\": null}]}" }, { "[]", "{x: 1}" } },
    { "{\"type\": \"object\", \"properties\": {\"user\": {\"type\": \"object\", \"properties\": "
      "{\"id\": {\"type\": \"string\", \"format\": \"uuid\"}, \"tags\": {\"type\": \"array\", "
      "\"items\": {\"enum\": [\"a\", \"b\"]}, \"maxItems\": 2}}, \"required\": [\"id\", \"tags\"]}}, "
      "\"required\": [\"user\"]}",
      { "{\"user\": {\"id\": \"123e4567-e89b-12d3-a456-426614174000\", \"tags\": []}}",
        "{\"user\":{\"id\":\"123e4567-e89b-12d3-a456-426614174000\",\"tags\":[\"a\",\"b\"]}}" },
      { "{\"user\": {\"id\": \"123\", \"tags\": []}}",
        "{\"user\": {\"id\": \"123e4567-e89b-12d3-a456-426614174000\", \"tags\": [\"c\"]}}",
        "{\"user\": {\"id\": \"123e4567-e89b-12d3-a456-426614174000\", \"tags\": [\"a\",\"a\",\"a\"]}}" } },
    { "{\"anyOf\": [{\"type\": \"integer\"}, {\"type\": \"string\", \"maxLength\": 1}]}",
      { "5", "\"x\"" }, { "\"xy\"", "true" } },
    { "{\"type\": [\"string\", \"null\"]}", { "\"s\"", "null" }, { "1" } },
    { "{\"type\": \"string\", \"format\": \"date\"}", { "\"2024-02-29\"" },
      { "\"2024-13-01\"", "\"24-01-01\"" } },
    { "{\"type\": \"string\", \"format\": \"time\"}", { "\"23:59:60Z\"", "\"12:00:00.5+01:00\"" },
      { "\"24:00:00Z\"", "\"12:00\"" } },
    { "{\"type\": \"string\", \"format\": \"date-time\"}", { "\"2024-01-02T03:04:05Z\"" },
      { "\"2024-01-02 03:04:05Z\"" } },
    { "{\"type\": \"array\", \"prefixItems\": [{\"type\": \"integer\"}, {\"type\": \"boolean\"}]}",
      { "[1, true]" }, { "[1]", "[true, 1]", "[1, true, 2]" } },
    { "{\"$defs\": {\"node\": {\"type\": \"object\", \"properties\": {\"v\": {\"type\": \"integer\"}, "
      "\"next\": {\"anyOf\": [{\"$ref\": \"#/$defs/node\"}, {\"type\": \"null\"}]}}, "
      "\"required\": [\"v\", \"next\"]}}, \"$ref\": \"#/$defs/node\"}",
      { "{\"v\": 1, \"next\": null}", "{\"v\": 1, \"next\": {\"v\": 2, \"next\": null}}" },
      { "{\"v\": 1}", "{\"v\": 1, \"next\": {\"v\": 2}}" } },
    { "{}", { "1", "\"s\"", "[]", "{\"a\": [null]}" }, { "", "{" } },
};

static void test_schema_table(void)
{
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        const struct schema_case *c = &cases[k];
        char *text = NULL;
        int ret = ork_json_schema_to_gbnf(c->schema, strlen(c->schema), &text);
        if (ret < 0) {
            fprintf(stderr, "schema %s: %s\n", c->schema, ork_error_describe(ret));
            CHECK(!"convert");
            continue;
        }
        struct ork_grammar *g = NULL;
        ret = ork_grammar_parse(text, strlen(text), &g);
        if (ret < 0) {
            fprintf(stderr, "schema %s\ngrammar:\n%s\n%s\n", c->schema, text,
                    ork_error_describe(ret));
            CHECK(!"parse");
            ork_free(text);
            continue;
        }
        for (int i = 0; i < 6 && c->valid[i]; i++)
            if (!accepts(g, c->valid[i])) {
                fprintf(stderr, "schema %s\ngrammar:\n%s\nrejects valid %s\n", c->schema, text,
                        c->valid[i]);
                CHECK(!"valid instance");
            }
        for (int i = 0; i < 6 && c->invalid[i]; i++)
            if (accepts(g, c->invalid[i])) {
                fprintf(stderr, "schema %s\ngrammar:\n%s\naccepts invalid %s\n", c->schema,
                        text, c->invalid[i]);
                CHECK(!"invalid instance");
            }
        ork_grammar_free(g);
        ork_free(text);
    }
}

static void test_json_object_mode(void)
{
    struct ork_grammar *g = NULL;
    REQUIRE(ork_grammar_from_json_schema(ORK_JSON_OBJECT_SCHEMA, strlen(ORK_JSON_OBJECT_SCHEMA),
                                         &g) == 0);
    CHECK(accepts(g, "{\"a\": {\"b\": [1, 2]}}"));
    CHECK(accepts(g, "{}"));
    CHECK(!accepts(g, "[1]"));
    CHECK(!accepts(g, "\"s\""));
    ork_grammar_free(g);
}

static void check_refused(const char *schema, int code, const char *want)
{
    char *text = NULL;
    int ret = ork_json_schema_to_gbnf(schema, strlen(schema), &text);
    CHECK_EQ_INT(ret, code);
    CHECK(text == NULL);
    if (!strstr(ork_error_message(), want)) {
        fprintf(stderr, "schema %s: message '%s', wanted '%s'\n", schema, ork_error_message(),
                want);
        CHECK(!"message");
    }
}

static void test_refused(void)
{
    check_refused("{\"type\": \"string\", \"pattern\": \"^a\"}", ORK_EUNSUPPORTED, "'pattern'");
    check_refused("{\"type\": \"integer\", \"minimum\": 3}", ORK_EUNSUPPORTED, "'minimum'");
    check_refused("{\"type\": \"wat\"}", ORK_EFORMAT, "unknown type 'wat'");
    check_refused("{\"type\": ", ORK_EFORMAT, "malformed JSON");
    check_refused("{\"$ref\": \"http://x/y\"}", ORK_EUNSUPPORTED, "$ref");
    check_refused("{\"$ref\": \"#/$defs/missing\"}", ORK_EFORMAT, "names nothing");
    check_refused("{\"type\": \"array\", \"minItems\": 3, \"maxItems\": 2}", ORK_EFORMAT,
                  "maxItems below minItems");
    check_refused("{\"type\": \"object\", \"properties\": {\"a\": {}}, "
                  "\"additionalProperties\": true}", ORK_EUNSUPPORTED, "additional properties");
    check_refused("3", ORK_EFORMAT, "root: a schema must be an object");
}

/* Blanks between tokens are bounded: one space, or a newline and an indentation; a run of
 * spaces is refused, compact and pretty-printed JSON (2- and 4-space, tabs) are accepted. */
static void test_whitespace_bounded(void)
{
    static const char *schema = "{\"type\": \"object\", \"properties\": {\"a\": {\"type\": "
                                "\"array\", \"items\": {\"type\": \"object\"}}, \"b\": "
                                "{\"type\": \"integer\"}}, \"required\": [\"a\", \"b\"]}";
    const char *schemas[] = { schema, ORK_JSON_OBJECT_SCHEMA };
    for (int k = 0; k < 2; k++) {
        struct ork_grammar *g = NULL;
        REQUIRE(ork_grammar_from_json_schema(schemas[k], strlen(schemas[k]), &g) == 0);
        CHECK(accepts(g, "{\"a\":[{}],\"b\":1}"));
        CHECK(accepts(g, "{\"a\": [{\"x\": 1}], \"b\": 1}"));
        CHECK(accepts(g, "{\n  \"a\": [\n    {\n      \"x\": 1\n    }\n  ],\n  \"b\": 1\n}"));
        CHECK(accepts(g, "{\n    \"a\": [\n        {}\n    ],\n    \"b\": 1\n}"));
        CHECK(accepts(g, "{\n\t\"a\": [\n\t\t{}\n\t],\n\t\"b\": 1\n}"));
        CHECK(!accepts(g, "{\"a\":  [{}], \"b\": 1}"));                  /* two spaces */
        CHECK(!accepts(g, "{\"a\": [{}],                    \"b\": 1}")); /* a long run */
        CHECK(!accepts(g, "{\"a\": [{}], \n\"b\": 1}"));                 /* space, newline */
        CHECK(!accepts(g, "{\"a\": [{}],\n\n\"b\": 1}"));               /* two newlines */
        CHECK(!accepts(g, "{\"a\": [{}],\n                      \"b\": 1}"));  /* 22 */
        CHECK(!accepts(g, " {\"a\": [{}], \"b\": 1}"));                  /* before the value */
        ork_grammar_free(g);
    }
}

int main(void)
{
    RUN(test_schema_table);
    RUN(test_whitespace_bounded);
    RUN(test_json_object_mode);
    RUN(test_refused);
    return ork_test_done();
}
