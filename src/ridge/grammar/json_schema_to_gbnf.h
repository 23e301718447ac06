#pragma once
// JSON Schema (what OpenAI's structured outputs accept, and a little more)
// → a GBNF grammar whose every sentence is JSON that validates against the
// schema. The grammar may accept fewer documents than the schema does (the
// choices below), never more — except for `oneOf`, read as `anyOf`, whose
// branches the schema author must keep disjoint.
//
// Supported keywords:
//   type (a name or a list), enum, const, anyOf, oneOf, allOf with one schema,
//   $ref to "#", "#/$defs/…", "#/definitions/…" or any local JSON pointer
//   (recursion allowed), $defs / definitions;
//   object: properties, required, additionalProperties (absent or true: any
//     value; false; or a schema);
//   array: items (a schema or false), prefixItems, minItems, maxItems;
//   string: minLength, maxLength, pattern (regex_to_gbnf.h; JSON Schema's
//     search semantics: unanchored ends match anything), format date, time,
//     date-time, uuid, email;
//   number / integer: minimum, maximum, exclusiveMinimum, exclusiveMaximum
//     (json_number_ranges.h);
//   annotations are ignored: title, description, default, examples, $schema,
//   $id, $comment, deprecated, readOnly, writeOnly.
// Anything else is a ridge::Error naming the keyword and the JSON pointer of
// the schema that holds it: "json schema at /properties/tags: 'uniqueItems'
// is not supported".
//
// Layout of the JSON written (what the grammar accepts):
//  - properties in their declaration order, optional ones may be left out;
//    additional properties (when allowed) after the declared ones, under
//    keys written without escapes that repeat no declared name;
//  - whitespace as json_gbnf_primitives.h bounds it, also before and after
//    the whole document;
//  - enum and const values: strings and numbers exactly as compact JSON
//    writes them (nlohmann's dump, which matches Python's json.dumps with
//    ensure_ascii=False: 1.5, "a\"b", "\u0001"), objects and arrays with the
//    members in the schema's order and whitespace as anywhere else;
//  - a schema with no `type` takes the types its keywords imply (properties
//    → object, items → array, minLength → string, minimum → number ...), or
//    any value when none;
//  - type-specific keywords combined in ways not listed (format with
//    pattern, pattern with minLength, enum with minLength ...) are refused.
// Repetition counts (minItems, maxLength ...) above kMaxSchemaRepeat are
// refused: each becomes grammar text.
#include <cstdint>
#include <string>
#include <string_view>

namespace ridge::grammar {

inline constexpr int64_t kMaxSchemaRepeat = 1000;

// `schema_text` is JSON; it is parsed here, keeping the declaration order of
// properties (which nlohmann::json's default map would sort).
std::string JsonSchemaToGbnf(std::string_view schema_text);

// response_format {"type": "json_object"}: any JSON object.
std::string JsonObjectGbnf();

}  // namespace ridge::grammar
