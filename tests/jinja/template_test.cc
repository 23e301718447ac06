// The interpreter's language features and error paths, one behaviour per
// test; whole real templates are held to Jinja2 by tests/jinja/oracle.py.
#include "ridge/jinja/template.h"
#include "ridge/jinja/parser.h"

#include <gtest/gtest.h>

#include <string>

namespace ridge::jinja {
namespace {

using nlohmann::ordered_json;

std::string Render(const std::string& source, const ordered_json& vars = ordered_json::object(),
                   const RenderOptions& options = {}) {
  return Template(source).Render(vars, options);
}

// The error a template raises, with its line ("line N: message").
std::string ErrorOf(const std::string& source, const ordered_json& vars = ordered_json::object(),
                    const RenderOptions& options = {}) {
  try {
    Render(source, vars, options);
  } catch (const TemplateError& e) {
    return e.Describe();
  }
  return "(no error)";
}

TEST(JinjaTemplate, ForLoopVariables) {
  EXPECT_EQ(Render("{% for x in xs %}{{ loop.index }}{{ loop.index0 }}{{ loop.revindex }}{{ loop.first }}"
                   "{{ loop.last }}{{ loop.length }}|{% endfor %}",
                   {{"xs", {"a", "b"}}}),
            "102TrueFalse2|211FalseTrue2|");
  EXPECT_EQ(Render("{% for x in xs %}{{ loop.previtem }}>{{ x }}<{{ loop.nextitem }},{% endfor %}", {{"xs", {1, 2, 3}}}),
            ">1<2,1>2<3,2>3<,");
  EXPECT_EQ(Render("{% for x in xs %}{{ loop.cycle('odd', 'even') }}{% endfor %}", {{"xs", {1, 2, 3}}}), "oddevenodd");
}

TEST(JinjaTemplate, ForLoopFilterElseBreakContinueAndUnpacking) {
  EXPECT_EQ(Render("{% for x in xs if x > 1 %}{{ x }}/{{ loop.length }} {% endfor %}", {{"xs", {1, 2, 3}}}),
            "2/2 3/2 ");
  EXPECT_EQ(Render("{% for x in xs %}{{ x }}{% else %}empty{% endfor %}", {{"xs", ordered_json::array()}}), "empty");
  EXPECT_EQ(Render("{% for x in xs %}{% if x == 2 %}{% continue %}{% endif %}{% if x == 4 %}{% break %}{% endif %}"
                   "{{ x }}{% endfor %}",
                   {{"xs", {1, 2, 3, 4, 5}}}),
            "13");
  EXPECT_EQ(Render("{% for k, v in d.items() %}{{ k }}={{ v }};{% endfor %}", {{"d", {{"b", 1}, {"a", 2}}}}),
            "b=1;a=2;");
}

TEST(JinjaTemplate, ScopesAndNamespace) {
  // `set` in a loop stays in the loop; a namespace carries the value out.
  EXPECT_EQ(Render("{% set x = 1 %}{% for i in [1, 2] %}{% set x = i %}{% endfor %}{{ x }}"), "1");
  EXPECT_EQ(Render("{% set ns = namespace(x=1) %}{% for i in [1, 2] %}{% set ns.x = ns.x + i %}{% endfor %}{{ ns.x }}"),
            "4");
  EXPECT_EQ(Render("{% if true %}{% set y = 'in if' %}{% endif %}{{ y }}"), "in if");
}

TEST(JinjaTemplate, IfElifElse) {
  const std::string t = "{% if n < 0 %}neg{% elif n == 0 %}zero{% else %}pos{% endif %}";
  EXPECT_EQ(Render(t, {{"n", -1}}), "neg");
  EXPECT_EQ(Render(t, {{"n", 0}}), "zero");
  EXPECT_EQ(Render(t, {{"n", 5}}), "pos");
}

TEST(JinjaTemplate, MacrosWithDefaultsAndKeywords) {
  EXPECT_EQ(Render("{% macro tag(name, open='<', close='>') %}{{ open }}{{ name }}{{ close }}{% endmacro %}"
                   "{{ tag('a') }}{{ tag('b', close=']') }}"),
            "<a><b]");
}

TEST(JinjaTemplate, FilterBlockAndSetBlock) {
  EXPECT_EQ(Render("{% filter upper %}hi {{ x }}{% endfilter %}", {{"x", "there"}}), "HI THERE");
  EXPECT_EQ(Render("{% set s %}a{{ 1 + 1 }}b{% endset %}[{{ s }}]"), "[a2b]");
}

TEST(JinjaTemplate, Expressions) {
  EXPECT_EQ(Render("{{ 7 // 2 }} {{ -7 // 2 }} {{ 7 % 3 }} {{ -7 % 3 }} {{ 7 / 2 }} {{ 2 ** 10 }} {{ 1 + 2 * 3 }}"),
            "3 -4 1 2 3.5 1024 7");
  EXPECT_EQ(Render("{{ 'a' ~ 1 ~ none }} {{ 'ab' * 3 }} {{ [1] + [2] }}"), "a1None ababab [1, 2]");
  EXPECT_EQ(Render("{{ 'b' in 'abc' }} {{ 2 in [1, 2] }} {{ 'k' in {'k': 1} }} {{ 3 not in [1] }}"),
            "True True True True");
  EXPECT_EQ(Render("{{ 'yes' if x else 'no' }}{{ 'never' if false }}", {{"x", true}}), "yes");
  EXPECT_EQ(Render("{{ none or 'default' }} {{ 0 and 1 }} {{ not [] }}"), "default 0 True");
  // Chained comparisons mean what they do in Python.
  EXPECT_EQ(Render("{{ 1 < 2 < 3 }} {{ 3 > 2 < 1 }} {{ 1 < 3 > 2 }} {{ 1 == 1 in [1] }}"), "True False True True");
}

TEST(JinjaTemplate, SlicingCountsCodePoints) {
  EXPECT_EQ(Render("{{ s[1:3] }}|{{ s[::-1] }}|{{ s[-1] }}|{{ s | length }}", {{"s", "héllo"}}), "él|olléh|o|5");
  EXPECT_EQ(Render("{{ xs[1:] }} {{ xs[:-1] }} {{ xs[::2] }}", {{"xs", {1, 2, 3}}}), "[2, 3] [1, 2] [1, 3]");
}

TEST(JinjaTemplate, Tests) {
  EXPECT_EQ(Render("{{ x is defined }}{{ y is defined }}{{ y is undefined }}{{ n is none }}{{ s is string }}"
                   "{{ d is mapping }}{{ l is iterable }}{{ 4 is even }}{{ 9 is divisibleby 3 }}{{ s is not number }}",
                   {{"x", 1}, {"n", nullptr}, {"s", "t"}, {"d", ordered_json::object()}, {"l", {1}}}),
            "TrueFalseTrueTrueTrueTrueTrueTrueTrueTrue");
}

TEST(JinjaTemplate, FiltersAndMethods) {
  EXPECT_EQ(Render("{{ '  a b  ' | trim }}|{{ ' x '.strip() }}|{{ 'a,b'.split(',') }}|{{ 'Ab'.upper() }}{{ 'Ab' | lower }}"),
            "a b|x|['a', 'b']|ABab");
  EXPECT_EQ(Render("{{ ['a', 'b'] | join('-') }} {{ 'abc'.startswith('ab') }} {{ 'x.y'.replace('.', '/') }}"),
            "a-b True x/y");
  const ordered_json msgs = {{{"role", "system"}, {"content", "S"}}, {{"role", "user"}, {"content", "U"}}};
  EXPECT_EQ(Render("{{ messages | selectattr('role', 'equalto', 'user') | map(attribute='content') | list }}",
                   {{"messages", msgs}}),
            "['U']");
  EXPECT_EQ(Render("{{ messages | rejectattr('role', 'equalto', 'user') | list | length }}", {{"messages", msgs}}), "1");
  EXPECT_EQ(Render("{{ x | default('d') }} {{ '' | default('e', true) }} {{ [3, 1, 2] | sort | first }}"), "d e 1");
  EXPECT_EQ(Render("{{ d | dictsort }} {{ d.get('zz', 0) }}", {{"d", {{"b", 1}, {"a", 2}}}}),
            "[['a', 2], ['b', 1]] 0");
}

TEST(JinjaTemplate, ToJsonIsTransformersOwn) {
  // Keys in insertion order, ", " and ": " separators, non-ASCII kept, no HTML escaping.
  EXPECT_EQ(Render("{{ v | tojson }}", {{"v", {{"z", "é<>"}, {"a", {1, 2.5, nullptr, true}}}}}),
            R"({"z": "é<>", "a": [1, 2.5, null, true]})");
  EXPECT_EQ(Render("{{ v | tojson(indent=2) }}", {{"v", {{"a", {1}}}}}), "{\n  \"a\": [\n    1\n  ]\n}");
}

TEST(JinjaTemplate, WhitespaceControlAsTransformers) {
  // trim_blocks drops the newline after a block tag; lstrip_blocks the indentation before it.
  EXPECT_EQ(Render("{% if true %}\n  x\n  {% endif %}\ny"), "  x\ny");
  EXPECT_EQ(Render("a  {%- if true -%}  b  {%- endif -%}  c"), "abc");
  EXPECT_EQ(Render("a\n{# comment #}\nb"), "a\nb");
  EXPECT_EQ(Render("{{ 'x' }}\n"), "x");  // one trailing newline of the source is dropped
  EXPECT_EQ(Render("  {%+ if true %}k{% endif %}"), "  k");
}

TEST(JinjaTemplate, StrftimeNowUsesTheGivenClock) {
  RenderOptions options;
  options.now = 1721001600;  // 2024-07-15 00:00:00 UTC
  EXPECT_EQ(Render("{{ strftime_now('%d %b %Y') }}", ordered_json::object(), options), "15 Jul 2024");
}

TEST(JinjaTemplate, RaiseExceptionCarriesTheTemplatesMessage) {
  try {
    Render("{{ raise_exception('Conversation roles must alternate') }}");
    FAIL() << "no exception";
  } catch (const TemplateRaised& e) {
    EXPECT_STREQ(e.what(), "Conversation roles must alternate");
  }
}

TEST(JinjaTemplate, UndefinedValuesPrintEmptyButFailWhenUsed) {
  EXPECT_EQ(Render("[{{ missing }}][{{ d.nokey }}]", {{"d", ordered_json::object()}}), "[][]");
  EXPECT_EQ(ErrorOf("{{ missing.attr }}"), "line 1: 'missing' is undefined");
  EXPECT_EQ(ErrorOf("\n{{ missing + 1 }}"), "line 2: 'missing' is undefined");
  EXPECT_EQ(ErrorOf("{{ d.nokey.deeper }}", {{"d", ordered_json::object()}}),
            "line 1: 'dict object' has no attribute 'nokey'");
}

TEST(JinjaTemplate, SyntaxErrorsNameTheLine) {
  EXPECT_EQ(ErrorOf("a\n{% if x %}\nb"), "line 3: unexpected end of template, expected 'elif' or 'else' or 'endif'");
  EXPECT_EQ(ErrorOf("{% frobnicate %}"), "line 1: unknown tag 'frobnicate'");
  EXPECT_EQ(ErrorOf("\n\n{{ 1 + }}"), "line 3: unexpected '}}'");
  EXPECT_EQ(ErrorOf("{{ 'open"), "line 1: unexpected end of string");
  EXPECT_EQ(ErrorOf("{{ x | nosuchfilter }}"), "line 1: No filter named 'nosuchfilter'.");
}

TEST(JinjaTemplate, ListsAndDictsAreReadOnly) {
  EXPECT_NE(ErrorOf("{% set l = [] %}{{ l.append(1) }}"), "(no error)");
  EXPECT_EQ(ErrorOf("{% set d = {} %}{% set d.x = 1 %}"), "line 1: cannot assign attribute on non-namespace object");
}

TEST(JinjaTemplateLimits, DeepNestingIsRefused) {
  std::string deep(kMaxParseDepth + 10, '(');
  EXPECT_NE(ErrorOf("{{ " + deep + "1" + std::string(kMaxParseDepth + 10, ')') + " }}").find("nesting deeper"),
            std::string::npos);
}

TEST(JinjaTemplateLimits, RunawayLoopsStop) {
  RenderOptions options;
  options.limits.max_loop_iterations = 1000;
  EXPECT_NE(ErrorOf("{% for i in range(10) %}{% for j in range(10) %}{% for k in range(100) %}{% endfor %}{% endfor %}"
                    "{% endfor %}",
                    ordered_json::object(), options)
                .find("iterations"),
            std::string::npos);
  EXPECT_NE(ErrorOf("{{ range(100000) | length }}", ordered_json::object(), options).find("range()"),
            std::string::npos);
}

TEST(JinjaTemplateLimits, OutputAndValueSizesAreCapped) {
  RenderOptions options;
  options.limits.max_output_bytes = 1000;
  EXPECT_NE(ErrorOf("{% for i in range(100) %}0123456789abcdef{% endfor %}", ordered_json::object(), options)
                .find("exceeds 1000 bytes"),
            std::string::npos);
  // Doubling a string 40 times would need a terabyte: refused at the cap, not after.
  EXPECT_NE(ErrorOf("{% set ns = namespace(s='ab') %}{% for i in range(40) %}{% set ns.s = ns.s + ns.s %}{% endfor %}",
                    ordered_json::object(), options)
                .find("exceeds"),
            std::string::npos);
}

TEST(JinjaTemplateLimits, ANamespaceHoldingItselfComparesAndPrints) {
  EXPECT_EQ(Render("{% set ns = namespace() %}{% set ns.me = [ns] %}{{ ns == ns }} {{ ns.me == [ns] }} {{ ns.me }}"),
            "True True [<Namespace>]");
}

TEST(JinjaTemplateLimits, RecursiveMacrosStop) {
  EXPECT_NE(ErrorOf("{% macro f(n) %}{{ f(n + 1) }}{% endmacro %}{{ f(0) }}").find("macro calls nested deeper"),
            std::string::npos);
}

}  // namespace
}  // namespace ridge::jinja
