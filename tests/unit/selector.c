/* Label selectors against upstream semantics. Expected results come from
 * k8s.io/apimachinery: pkg/labels/selector_test.go (TestSelectorParse,
 * TestSetSelectorParser, TestSelectorMatches, TestRequirementConstructor,
 * TestRequirementSelectorMatching, TestToString), pkg/apis/meta/v1
 * helpers_test.go (TestLabelSelectorAsSelector), and otherwise from
 * reading selector.go and api/validate/content (IsLabelKey, IsLabelValue,
 * IsDNS1123Subdomain) by hand; each such case says why. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "labels.h"
#include "selector.h"

static char *
rep(char c, size_t n, const char *prefix, const char *suffix)
{
	size_t lp = strlen(prefix), ls = strlen(suffix);
	char *s = malloc(lp + n + ls + 1);

	assert_non_null(s);
	memcpy(s, prefix, lp);
	memset(s + lp, c, n);
	memcpy(s + lp + n, suffix, ls + 1);
	return s;
}

static struct rs_labels *
labels(const char *json)
{
	struct rs_labels *l = NULL;
	cJSON *o = cJSON_Parse(json);

	assert_non_null(o);
	assert_int_equal(rs_labels_from_json(o, &l, NULL, 0), RS_OK);
	cJSON_Delete(o);
	return l;
}

static char *
render(const struct rs_selector *s)
{
	char *str = NULL;

	assert_int_equal(rs_selector_string(s, &str), RS_OK);
	return str;
}

/* ---- parse: accepted, with the canonical string upstream gives ---- */

static const struct { const char *in, *out; } good[] = {
	/* TestSelectorParse: String() is the input without blanks */
	{ "x=a,y=b,z=c", "x=a,y=b,z=c" },
	{ "", "" },
	{ "x!=a,y=b", "x!=a,y=b" },
	{ "x=", "x=" },
	{ "x= ", "x=" },
	{ "x=,z= ", "x=,z=" },
	{ "x= ,z= ", "x=,z=" },
	{ "!x", "!x" },
	{ "x>1", "x>1" },
	{ "x>1,z<5", "x>1,z<5" },
	/* TestDeterministicParse: sorted by key */
	{ "x=a,a=x", "a=x,x=a" },
	/* TestSetSelectorParser (valid ones) */
	{ "\rx", "x" },
	{ "this-is-a-dns.domain.com/key-with-dash",
	  "this-is-a-dns.domain.com/key-with-dash" },
	{ "this-is-another-dns.domain.com/key-with-dash in (so,what)",
	  "this-is-another-dns.domain.com/key-with-dash in (so,what)" },
	{ "0.1.2.domain/99 notin (10.10.100.1, tick.tack.clock)",
	  "0.1.2.domain/99 notin (10.10.100.1,tick.tack.clock)" },
	{ "foo  in\t (abc)", "foo in (abc)" },
	{ "x notin\n (abc)", "x notin (abc)" },
	{ "x  notin\t\t\t(abc,def)", "x notin (abc,def)" },
	{ "x in (abc,def)", "x in (abc,def)" },
	{ "x in (abc,)", "x in (,abc)" },
	{ "x in ()", "x in ()" },
	{ "x notin (abc,,def),bar,z in (),w", "bar,w,x notin (,abc,def),z in ()" },
	{ "x,y in (a)", "x,y in (a)" },
	{ "x=a", "x=a" },
	{ "x<7", "x<7" },
	{ "x=a,y!=b,z in (h,i,j)", "x=a,y!=b,z in (h,i,j)" },
	{ "x notin ( )", "x notin ()" },
	{ "x notin (, a)", "x notin (,a)" },
	{ "a ", "a" },
	{ "a in (x,y,notin, z,in)", "a in (in,notin,x,y,z)" },
	/* TestSelectorMatches: in/notin as key and value */
	{ "notin=in", "notin=in" },
	/* TestToString: == renders as == */
	{ "x==abc", "x==abc" },
	/* TestRequirementConstructor: keys may start with a digit */
	{ "1foo in (bar)", "1foo in (bar)" },
	{ "1234 in (bar)", "1234 in (bar)" },
	/* selector.go: values of in/notin are a sets.String, listed sorted */
	{ "x in (b,a,b)", "x in (a,b)" },
	{ "x in (a,,)", "x in (,a)" },
	/* selector.go: sort.Sort by key only; equal keys keep their order */
	{ "x notin (b),x in (a)", "x notin (b),x in (a)" },
	{ "in in (in)", "in in (in)" },
	{ "a,b", "a,b" },
	/* content.IsLabelKey: MixedCase name, lowercase prefix, ._- inside */
	{ "example.com/My_Name.v-1=My.value_1-x",
	  "example.com/My_Name.v-1=My.value_1-x" },
};

static void
parse_good(void **state)
{
	struct rs_selector *s, *s2;
	char why[256], *str, *str2;
	size_t i;

	for (i = 0; i < sizeof good / sizeof good[0]; i++) {
		why[0] = '\0';
		if (rs_selector_parse(good[i].in, &s, why, sizeof why) != RS_OK)
			fail_msg("parse(\"%s\"): %s", good[i].in, why);
		assert_false(rs_selector_is_nothing(s));
		str = render(s);
		if (strcmp(str, good[i].out) != 0)
			fail_msg("parse(\"%s\") renders \"%s\", want \"%s\"",
			    good[i].in, str, good[i].out);
		/* round trip: the rendering parses to the same rendering */
		assert_int_equal(rs_selector_parse(str, &s2, NULL, 0), RS_OK);
		str2 = render(s2);
		assert_string_equal(str, str2);
		assert_int_equal(rs_selector_is_empty(s), good[i].out[0] == '\0');
		free(str);
		free(str2);
		rs_selector_free(s);
		rs_selector_free(s2);
	}
}

/* ---- parse: rejected, with a word the reason must hold ---- */

static const struct { const char *in, *why; } bad[] = {
	/* TestSelectorParse bad strings */
	{ "x=a||y=b", "invalid label value \"a||y\"" },
	{ "x==a==b", "found '==', expected: ',' or 'end of string'" },
	{ "!x=a", "found '=', expected: ',' or 'end of string'" },
	{ "x<a", "integer" },
	/* TestSetSelectorParser invalid ones */
	{ "x,,y", "found ',', expected: identifier after ','" },
	{ ",x,y", "found ',', expected: !, identifier, or 'end of string'" },
	{ "x nott in (y)", "found 'nott', expected: in, notin, =, ==, !=, gt, lt" },
	{ "a in (xyz),", "found '', expected: identifier after ','" },
	{ "a in (xyz)b notin ()", "found 'b', expected: ',' or 'end of string'" },
	{ "a in (xyz abc)", "found 'abc', expected: ',' or ')'" },
	{ "a notin(", "found '', expected: ',', ')' or identifier" },
	{ "a (", "found '(', expected: in, notin" },
	{ "(", "found '(', expected: !, identifier" },
	/* selector.go by hand: grammar */
	{ "a=b=c", "found '=', expected: ',' or 'end of string'" },
	{ "a in b", "found 'b' expected: '('" },
	{ "a in", "found '' expected: '('" },
	{ "a notin x,y", "found 'x' expected: '('" },
	{ "x in (a,b", "found '', expected: ',' or ')'" },
	{ "x in ((a))", "found '(', expected: ',', ')' or identifier" },
	{ "=a", "found '=', expected: !, identifier" },
	{ "!", "found '', expected: identifier" },
	{ "!=a", "found '!=', expected: !, identifier" },
	{ "a b", "found 'b', expected: in, notin" },
	{ "x!", "found '!', expected: in, notin" },
	{ "!x,", "identifier after ','" },
	{ "a=(", "found '(', expected: identifier" },
	{ "x>", "integer" },
	{ "a=b c", "found 'c', expected: ',' or 'end of string'" },
	/* strconv.ParseInt: over int64 */
	{ "x>9223372036854775808", "integer" },
	/* content.IsLabelKey */
	{ "-a", "name part must consist of" },
	{ "a-", "name part must consist of" },
	{ "a_=b", "name part must consist of" },
	{ "a$b", "name part must consist of" },
	{ "a/", "name part must be non-empty" },
	{ "/a", "prefix part must be non-empty" },
	{ "a/b/c", "with an optional DNS subdomain prefix" },
	{ "Example.com/a", "prefix part a lowercase RFC 1123 subdomain" },
	{ "a..b/c", "prefix part a lowercase RFC 1123 subdomain" },
	{ "-a.com/c", "prefix part a lowercase RFC 1123 subdomain" },
	{ "a-.com/c", "prefix part a lowercase RFC 1123 subdomain" },
	{ "a.b-/c", "prefix part a lowercase RFC 1123 subdomain" },
	{ "a./c", "prefix part a lowercase RFC 1123 subdomain" },
	{ "a_b.com/c", "prefix part a lowercase RFC 1123 subdomain" },
	/* content.IsLabelValue */
	{ "a=-b", "a valid label must be an empty string" },
	{ "a=b-", "a valid label must be an empty string" },
	{ "a in (x,-y)", "invalid label value \"-y\"" },
	{ "x>-1", "invalid label value \"-1\"" },  /* ParseInt would take it */
	{ "a=b/c", "invalid label value \"b/c\"" },
};

static void
parse_bad(void **state)
{
	struct rs_selector *s;
	char why[512];
	size_t i;

	for (i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		why[0] = '\0';
		s = (struct rs_selector *)1;
		if (rs_selector_parse(bad[i].in, &s, why, sizeof why) !=
		    RS_EPARSE)
			fail_msg("parse(\"%s\") accepted", bad[i].in);
		assert_null(s);
		if (strstr(why, bad[i].why) == NULL)
			fail_msg("parse(\"%s\"): \"%s\" lacks \"%s\"",
			    bad[i].in, why, bad[i].why);
	}
}

/* Limits: name 63, prefix 253, value 63 (IsLabelKey, IsDNS1123Subdomain,
 * IsLabelValue; TestRequirementConstructor for a 254-byte key). */
static void
parse_limits(void **state)
{
	struct { char *in; rs_code want; const char *why; } c[] = {
		{ rep('a', 63, "", ""), RS_OK, NULL },
		{ rep('a', 64, "", ""), RS_EPARSE, "no more than 63" },
		{ rep('a', 254, "", ""), RS_EPARSE, "no more than 63" },
		{ rep('a', 253, "", "/b"), RS_OK, NULL },
		{ rep('a', 254, "", "/b"), RS_EPARSE, "no more than 253" },
		{ rep('a', 63, "p.io/", ""), RS_OK, NULL },
		{ rep('a', 64, "p.io/", ""), RS_EPARSE, "no more than 63" },
		{ rep('v', 63, "k=", ""), RS_OK, NULL },
		{ rep('v', 64, "k=", ""), RS_EPARSE, "no more than 63" },
		{ rep('v', 64, "k in (a,", ")"), RS_EPARSE, "no more than 63" },
	};
	struct rs_selector *s;
	char why[512];
	size_t i;

	for (i = 0; i < sizeof c / sizeof c[0]; i++) {
		why[0] = '\0';
		if (rs_selector_parse(c[i].in, &s, why, sizeof why) != c[i].want)
			fail_msg("case %zu: parse(\"%s\"): %s", i, c[i].in, why);
		if (c[i].why != NULL && strstr(why, c[i].why) == NULL)
			fail_msg("case %zu: \"%s\" lacks \"%s\"", i, why,
			    c[i].why);
		rs_selector_free(s);
		free(c[i].in);
	}
}

static void
parse_why_prefix(void **state)
{
	struct rs_selector *s;
	char why[256];

	/* parse(): requirement errors are wrapped, list errors are not */
	assert_int_equal(rs_selector_parse("a in b", &s, why, sizeof why),
	    RS_EPARSE);
	assert_string_equal(why,
	    "unable to parse requirement: found 'b' expected: '('");
	assert_int_equal(rs_selector_parse("a,,b", &s, why, sizeof why),
	    RS_EPARSE);
	assert_string_equal(why, "found ',', expected: identifier after ','");
	/* a small buffer truncates, a NULL one is allowed */
	assert_int_equal(rs_selector_parse("a in b", &s, why, 8), RS_EPARSE);
	assert_string_equal(why, "unable ");
	assert_int_equal(rs_selector_parse("a in b", &s, NULL, 0), RS_EPARSE);
}

/* ---- matching ---- */

static const struct { const char *sel, *labels; int want; } match[] = {
	/* TestSelectorMatches */
	{ "", "{\"x\":\"y\"}", 1 },
	{ "x=y", "{\"x\":\"y\"}", 1 },
	{ "x=y,z=w", "{\"x\":\"y\",\"z\":\"w\"}", 1 },
	{ "x!=y,z!=w", "{\"x\":\"z\",\"z\":\"a\"}", 1 },
	{ "notin=in", "{\"notin\":\"in\"}", 1 },
	{ "x", "{\"x\":\"z\"}", 1 },
	{ "!x", "{\"y\":\"z\"}", 1 },
	{ "x>1", "{\"x\":\"2\"}", 1 },
	{ "x<1", "{\"x\":\"0\"}", 1 },
	{ "x=z", "{}", 0 },
	{ "x=y", "{\"x\":\"z\"}", 0 },
	{ "x=y,z=w", "{\"x\":\"w\",\"z\":\"w\"}", 0 },
	{ "x!=y,z!=w", "{\"x\":\"z\",\"z\":\"w\"}", 0 },
	{ "x", "{\"y\":\"z\"}", 0 },
	{ "!x", "{\"x\":\"z\"}", 0 },
	{ "x>1", "{\"x\":\"0\"}", 0 },
	{ "x<1", "{\"x\":\"2\"}", 0 },
	{ "foo=bar", "{\"foo\":\"bar\",\"baz\":\"blah\"}", 1 },
	{ "baz=blah", "{\"foo\":\"bar\",\"baz\":\"blah\"}", 1 },
	{ "foo=bar,baz=blah", "{\"foo\":\"bar\",\"baz\":\"blah\"}", 1 },
	{ "foo=blah", "{\"foo\":\"bar\",\"baz\":\"blah\"}", 0 },
	{ "baz=bar", "{\"foo\":\"bar\",\"baz\":\"blah\"}", 0 },
	{ "foo=bar,foobar=bar,baz=blah",
	  "{\"foo\":\"bar\",\"baz\":\"blah\"}", 0 },
	/* TestRequirementSelectorMatching */
	{ "x in (foo),y notin (alpha)", "{\"x\":\"foo\",\"y\":\"baz\"}", 1 },
	{ "x in (foo),y in (alpha)", "{\"x\":\"foo\",\"y\":\"baz\"}", 0 },
	{ "x notin (),y", "{\"y\":\"\"}", 1 },
	{ "!x,y", "{\"y\":\"\"}", 1 },
	{ "x notin (),!y", "{\"y\":\"\"}", 0 },
	{ "x in ()", "{\"y\":\"baz\"}", 0 },
	{ "z>1", "{\"z\":\"2\"}", 1 },
	{ "z>1", "{\"z\":\"v2\"}", 0 },
	/* Requirement.Matches by hand: NotIn and != match an absent key */
	{ "x!=a", "{}", 1 },
	{ "x!=a", "{\"x\":\"a\"}", 0 },
	{ "x notin (a)", "{}", 1 },
	{ "x notin (a)", "{\"x\":\"a\"}", 0 },
	{ "x notin (a,b)", "{\"x\":\"c\"}", 1 },
	{ "x in (a,b)", "{\"x\":\"b\"}", 1 },
	{ "x in (a,b)", "{}", 0 },
	{ "x", "{}", 0 },
	{ "!x", "{}", 1 },
	{ "x==a", "{\"x\":\"a\"}", 1 },
	{ "x=", "{\"x\":\"\"}", 1 },
	{ "x=", "{}", 0 },
	{ "x in ()", "{\"x\":\"\"}", 1 },
	{ "x>1", "{}", 0 },
	{ "x<1", "{}", 0 },
	{ "x<1", "{\"x\":\"-5\"}", 1 },
	{ "x>1", "{\"x\":\"99999999999999999999\"}", 0 },  /* ParseInt fails */
	{ "x<0", "{\"x\":\"-9223372036854775808\"}", 1 },   /* int64 min */
	{ "x<0", "{\"x\":\"-9223372036854775809\"}", 0 },
	{ "x>9223372036854775806", "{\"x\":\"9223372036854775807\"}", 1 },
	{ "x>0", "{\"x\":\"+1\"}", 1 },
	{ "x>1", "{\"x\":\"1\"}", 0 },
	{ "x<1", "{\"x\":\"1\"}", 0 },        /* ParseInt takes a sign */
	{ "x>0", "{\"x\":\" 1\"}", 0 },
	{ "x>1,x<3", "{\"x\":\"2\"}", 1 },
	{ "x>1,x<3", "{\"x\":\"3\"}", 0 },
	{ "a=x,a!=x", "{\"a\":\"x\"}", 0 },
	{ "", "{}", 1 },
};

static void
matching(void **state)
{
	struct rs_selector *s;
	struct rs_labels *l;
	size_t i;

	for (i = 0; i < sizeof match / sizeof match[0]; i++) {
		assert_int_equal(rs_selector_parse(match[i].sel, &s, NULL, 0),
		    RS_OK);
		l = labels(match[i].labels);
		if (rs_selector_matches(s, l) != match[i].want)
			fail_msg("\"%s\" on %s: want %d", match[i].sel,
			    match[i].labels, match[i].want);
		rs_selector_free(s);
		rs_labels_free(l);
	}
	/* NULL labels read as none */
	assert_int_equal(rs_selector_parse("!x,y!=z", &s, NULL, 0), RS_OK);
	assert_true(rs_selector_matches(s, NULL));
	rs_selector_free(s);
}

/* ---- metav1.LabelSelector ---- */

static const struct { const char *json, *out; int nothing; } ls_good[] = {
	/* TestLabelSelectorAsSelector */
	{ "{}", "", 0 },
	{ "{\"matchLabels\":{\"foo\":\"bar\"}}", "foo=bar", 0 },
	{ "{\"matchExpressions\":[{\"key\":\"baz\",\"operator\":\"In\","
	  "\"values\":[\"qux\",\"norf\"]}]}", "baz in (norf,qux)", 0 },
	{ "{\"matchLabels\":{\"foo\":\"bar\"},\"matchExpressions\":[{\"key\":"
	  "\"baz\",\"operator\":\"In\",\"values\":[\"qux\",\"norf\"]}]}",
	  "baz in (norf,qux),foo=bar", 0 },
	/* LabelSelectorAsSelector by hand */
	{ "null", "", 1 },
	{ "{\"matchLabels\":{},\"matchExpressions\":[]}", "", 0 },
	{ "{\"matchLabels\":null,\"matchExpressions\":null}", "", 0 },
	{ "{\"matchExpressions\":[{\"key\":\"a\",\"operator\":\"NotIn\","
	  "\"values\":[\"y\",\"x\"]},{\"key\":\"b\",\"operator\":\"Exists\"},"
	  "{\"key\":\"c\",\"operator\":\"DoesNotExist\",\"values\":[]}]}",
	  "a notin (x,y),b,!c", 0 },
	/* values are copied as given: no set, so duplicates render */
	{ "{\"matchExpressions\":[{\"key\":\"a\",\"operator\":\"In\","
	  "\"values\":[\"x\",\"x\"]}]}", "a in (x,x)", 0 },
	/* matchLabels first, then expressions, sorted by key stably */
	{ "{\"matchLabels\":{\"a\":\"1\"},\"matchExpressions\":[{\"key\":\"a\","
	  "\"operator\":\"Exists\"}]}", "a=1,a", 0 },
	{ "{\"matchLabels\":{\"z\":\"1\",\"app\":\"web\",\"k.io/t\":\"\"}}",
	  "app=web,k.io/t=,z=1", 0 },
	/* "" is a valid value */
	{ "{\"matchExpressions\":[{\"key\":\"a\",\"operator\":\"In\","
	  "\"values\":[\"\"]}]}", "a in ()", 0 },
	/* Go decodes null in a []string as "" */
	{ "{\"matchExpressions\":[{\"key\":\"a\",\"operator\":\"In\","
	  "\"values\":[\"b\",null]}]}", "a in (,b)", 0 },
	/* Go decodes a duplicated key as its last value */
	{ "{\"matchLabels\":{\"a\":\"1\",\"a\":\"2\"}}", "a=2", 0 },
};

static const struct { const char *json, *why; } ls_bad[] = {
	/* TestLabelSelectorAsSelector: Exists with values */
	{ "{\"matchExpressions\":[{\"key\":\"baz\",\"operator\":\"Exists\","
	  "\"values\":[\"qux\",\"norf\"]}]}", "must be empty for exists" },
	/* NewRequirement */
	{ "{\"matchExpressions\":[{\"key\":\"a\",\"operator\":\"DoesNotExist\","
	  "\"values\":[\"x\"]}]}", "must be empty for exists" },
	{ "{\"matchExpressions\":[{\"key\":\"a\",\"operator\":\"In\"}]}",
	  "values set can't be empty" },
	{ "{\"matchExpressions\":[{\"key\":\"a\",\"operator\":\"NotIn\","
	  "\"values\":[]}]}", "values set can't be empty" },
	{ "{\"matchExpressions\":[{\"key\":\"a\",\"operator\":\"in\","
	  "\"values\":[\"x\"]}]}", "\"in\" is not a valid pod selector operator" },
	{ "{\"matchExpressions\":[{\"key\":\"a\",\"operator\":\"Gt\","
	  "\"values\":[\"1\"]}]}", "\"Gt\" is not a valid pod selector operator" },
	{ "{\"matchExpressions\":[{\"key\":\"a\"}]}",
	  "\"\" is not a valid pod selector operator" },
	{ "{\"matchExpressions\":[null]}",
	  "\"\" is not a valid pod selector operator" },
	/* the operator is looked at before the key */
	{ "{\"matchExpressions\":[{\"key\":\"-\",\"operator\":\"Equals\"}]}",
	  "\"Equals\" is not a valid" },
	{ "{\"matchExpressions\":[{\"operator\":\"Exists\"}]}",
	  "name part must be non-empty" },
	{ "{\"matchLabels\":{\"a b\":\"x\"}}", "invalid label key \"a b\"" },
	{ "{\"matchLabels\":{\"a\":\"x y\"}}", "invalid label value \"x y\"" },
	{ "{\"matchExpressions\":[{\"key\":\"a\",\"operator\":\"In\","
	  "\"values\":[\"-x\"]}]}", "invalid label value \"-x\"" },
	/* decoding errors */
	{ "{\"matchLabels\":{\"a\":1}}", "not a string" },
	{ "{\"matchLabels\":[]}", "not a JSON object" },
	{ "{\"matchExpressions\":{}}", "not a JSON array" },
	{ "{\"matchExpressions\":[{\"key\":\"a\",\"operator\":\"In\","
	  "\"values\":[1]}]}", "not a string" },
	{ "\"a=b\"", "not a JSON object" },
};

static void
label_selector(void **state)
{
	struct rs_selector *s, *s2;
	char why[256], *str, *str2;
	cJSON *o;
	size_t i;

	for (i = 0; i < sizeof ls_good / sizeof ls_good[0]; i++) {
		assert_non_null(o = cJSON_Parse(ls_good[i].json));
		why[0] = '\0';
		if (rs_selector_from_label_selector(o, &s, why, sizeof why) !=
		    RS_OK)
			fail_msg("%s: %s", ls_good[i].json, why);
		assert_int_equal(rs_selector_is_nothing(s), ls_good[i].nothing);
		assert_int_equal(rs_selector_is_empty(s),
		    !ls_good[i].nothing && ls_good[i].out[0] == '\0');
		str = render(s);
		if (strcmp(str, ls_good[i].out) != 0)
			fail_msg("%s renders \"%s\", want \"%s\"",
			    ls_good[i].json, str, ls_good[i].out);
		/* what we send as labelSelector= parses back */
		assert_int_equal(rs_selector_parse(str, &s2, NULL, 0), RS_OK);
		str2 = render(s2);
		if (strstr(str, "x,x") == NULL)
			assert_string_equal(str, str2);
		free(str);
		free(str2);
		rs_selector_free(s);
		rs_selector_free(s2);
		cJSON_Delete(o);
	}
	for (i = 0; i < sizeof ls_bad / sizeof ls_bad[0]; i++) {
		assert_non_null(o = cJSON_Parse(ls_bad[i].json));
		why[0] = '\0';
		s = (struct rs_selector *)1;
		if (rs_selector_from_label_selector(o, &s, why, sizeof why) !=
		    RS_EPARSE)
			fail_msg("%s accepted", ls_bad[i].json);
		assert_null(s);
		if (strstr(why, ls_bad[i].why) == NULL)
			fail_msg("%s: \"%s\" lacks \"%s\"", ls_bad[i].json, why,
			    ls_bad[i].why);
		cJSON_Delete(o);
	}
}

/* nil is Nothing, {} is Everything (TestLabelSelectorAsSelector) */
static void
label_selector_nil_and_empty(void **state)
{
	struct rs_labels *l = labels("{\"a\":\"b\"}"), *none = labels("{}");
	struct rs_selector *s;
	cJSON *o;
	char *str;

	assert_int_equal(rs_selector_from_label_selector(NULL, &s, NULL, 0),
	    RS_OK);
	assert_true(rs_selector_is_nothing(s));
	assert_false(rs_selector_is_empty(s));
	assert_false(rs_selector_matches(s, l));
	assert_false(rs_selector_matches(s, none));
	assert_false(rs_selector_matches(s, NULL));
	str = render(s);
	assert_string_equal(str, "");
	free(str);
	rs_selector_free(s);

	assert_non_null(o = cJSON_Parse("{}"));
	assert_int_equal(rs_selector_from_label_selector(o, &s, NULL, 0),
	    RS_OK);
	assert_false(rs_selector_is_nothing(s));
	assert_true(rs_selector_is_empty(s));
	assert_true(rs_selector_matches(s, l));
	assert_true(rs_selector_matches(s, none));
	rs_selector_free(s);
	cJSON_Delete(o);

	/* a ReplicaSet-shaped selector on pods */
	assert_non_null(o = cJSON_Parse("{\"matchLabels\":{\"app\":\"web\"},"
	    "\"matchExpressions\":[{\"key\":\"tier\",\"operator\":\"NotIn\","
	    "\"values\":[\"db\"]}]}"));
	assert_int_equal(rs_selector_from_label_selector(o, &s, NULL, 0),
	    RS_OK);
	rs_labels_free(l);
	l = labels("{\"app\":\"web\"}");
	assert_true(rs_selector_matches(s, l));
	rs_labels_free(l);
	l = labels("{\"app\":\"web\",\"tier\":\"db\"}");
	assert_false(rs_selector_matches(s, l));
	rs_labels_free(l);
	l = labels("{\"app\":\"web\",\"tier\":\"fe\",\"x\":\"y\"}");
	assert_true(rs_selector_matches(s, l));
	rs_labels_free(l);
	l = labels("{\"tier\":\"fe\"}");
	assert_false(rs_selector_matches(s, l));
	rs_selector_free(s);
	cJSON_Delete(o);
	rs_labels_free(l);
	rs_labels_free(none);
}

/* ---- ReplicationController map selectors ---- */

static void
map_selector(void **state)
{
	struct rs_labels *l;
	struct rs_selector *s;
	char why[256], *str;
	cJSON *o;

	/* nil map: nil LabelSelector after conversion, so Nothing */
	assert_int_equal(rs_selector_from_map(NULL, &s, NULL, 0), RS_OK);
	assert_true(rs_selector_is_nothing(s));
	rs_selector_free(s);
	assert_non_null(o = cJSON_Parse("null"));
	assert_int_equal(rs_selector_from_map(o, &s, NULL, 0), RS_OK);
	assert_true(rs_selector_is_nothing(s));
	rs_selector_free(s);
	cJSON_Delete(o);

	/* {}: SelectorFromSet({}) and LabelSelector{} are Everything; the
	 * caller applies "empty matches nothing" where upstream does */
	assert_non_null(o = cJSON_Parse("{}"));
	assert_int_equal(rs_selector_from_map(o, &s, NULL, 0), RS_OK);
	assert_true(rs_selector_is_empty(s));
	assert_false(rs_selector_is_nothing(s));
	rs_selector_free(s);
	cJSON_Delete(o);

	/* TestSetMatches, and sorted rendering (SelectorFromSet) */
	assert_non_null(o = cJSON_Parse("{\"foo\":\"bar\",\"baz\":\"blah\"}"));
	assert_int_equal(rs_selector_from_map(o, &s, NULL, 0), RS_OK);
	str = render(s);
	assert_string_equal(str, "baz=blah,foo=bar");
	free(str);
	l = labels("{\"foo\":\"bar\",\"baz\":\"blah\",\"x\":\"y\"}");
	assert_true(rs_selector_matches(s, l));
	rs_labels_free(l);
	l = labels("{\"foo\":\"bar\"}");
	assert_false(rs_selector_matches(s, l));
	rs_labels_free(l);
	rs_selector_free(s);
	cJSON_Delete(o);

	/* TestValidatedSelectorFromSet: a 64-byte value is refused */
	assert_non_null(o = cJSON_Parse("{\"Key\":\"axahm2EJ8Phiephe2eixohbee9"
	    "eGeiyees1thuozi1xoh0GiuH3diewi8iem7Nui\"}"));
	assert_int_equal(rs_selector_from_map(o, &s, why, sizeof why),
	    RS_EPARSE);
	assert_non_null(strstr(why, "must be no more than 63 characters"));
	cJSON_Delete(o);

	assert_non_null(o = cJSON_Parse("{\"a\":true}"));
	assert_int_equal(rs_selector_from_map(o, &s, why, sizeof why),
	    RS_EPARSE);
	assert_non_null(strstr(why, "not a string"));
	cJSON_Delete(o);

	assert_non_null(o = cJSON_Parse("[]"));
	assert_int_equal(rs_selector_from_map(o, &s, why, sizeof why),
	    RS_EPARSE);
	cJSON_Delete(o);
}

/* Large selectors keep their order and round-trip. */
static void
many_requirements(void **state)
{
	struct rs_selector *s, *s2;
	char buf[64], *str, *str2;
	cJSON *o = cJSON_CreateObject();
	struct rs_labels *l;
	int i;

	for (i = 999; i >= 0; i--) {
		snprintf(buf, sizeof buf, "k%04d", i);
		assert_non_null(cJSON_AddStringToObject(o, buf, buf + 1));
	}
	assert_int_equal(rs_selector_from_map(o, &s, NULL, 0), RS_OK);
	str = render(s);
	assert_int_equal(strncmp(str, "k0000=0000,k0001=0001,", 22), 0);
	assert_int_equal(rs_selector_parse(str, &s2, NULL, 0), RS_OK);
	str2 = render(s2);
	assert_string_equal(str, str2);
	assert_int_equal(rs_labels_from_json(o, &l, NULL, 0), RS_OK);
	assert_true(rs_selector_matches(s, l));
	assert_true(rs_selector_matches(s2, l));
	cJSON_DeleteItemFromObject(o, "k0500");
	rs_labels_free(l);
	assert_int_equal(rs_labels_from_json(o, &l, NULL, 0), RS_OK);
	assert_false(rs_selector_matches(s, l));
	rs_labels_free(l);
	free(str);
	free(str2);
	rs_selector_free(s);
	rs_selector_free(s2);
	cJSON_Delete(o);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(parse_good),
		cmocka_unit_test(parse_bad),
		cmocka_unit_test(parse_limits),
		cmocka_unit_test(parse_why_prefix),
		cmocka_unit_test(matching),
		cmocka_unit_test(label_selector),
		cmocka_unit_test(label_selector_nil_and_empty),
		cmocka_unit_test(map_selector),
		cmocka_unit_test(many_requirements),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
