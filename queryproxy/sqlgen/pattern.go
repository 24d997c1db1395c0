package sqlgen

import (
	"strings"

	"github.com/gatehouse/gatehouse/queryproxy/iql"
)

// pattern writes BEGINS, CONTAINS or LIKE on a String column; see the package doc for why
// SQLite uses GLOB and PostgreSQL LIKE ... ESCAPE '\'.
func (g *gen) pattern(c Column, op iql.Op, value string) {
	g.operand(c, usePattern)
	if g.d == SQLite {
		g.b.WriteString(" GLOB ")
		g.bind(sqlitePattern(op, value), "")
		return
	}
	g.b.WriteString(" LIKE ")
	g.bind(postgresPattern(op, value), "")
	g.b.WriteString(` ESCAPE '\'`)
}

// globEscaper escapes GLOB's metacharacters as one-character classes.
var globEscaper = strings.NewReplacer("*", "[*]", "?", "[?]", "[", "[[]")

// likeEscaper escapes LIKE's metacharacters and the escape character with "\".
var likeEscaper = strings.NewReplacer(`\`, `\\`, "%", `\%`, "_", `\_`)

// sqlitePattern turns a BEGINS, CONTAINS or LIKE value into a GLOB pattern.
func sqlitePattern(op iql.Op, v string) string {
	switch op {
	case iql.OpBegins:
		return globEscaper.Replace(v) + "*"
	case iql.OpContains:
		return "*" + globEscaper.Replace(v) + "*"
	}
	return wildcards(v, globEscaper, "*")
}

// postgresPattern turns a BEGINS, CONTAINS or LIKE value into a LIKE pattern for
// ESCAPE '\'.
func postgresPattern(op iql.Op, v string) string {
	switch op {
	case iql.OpBegins:
		return likeEscaper.Replace(v) + "%"
	case iql.OpContains:
		return "%" + likeEscaper.Replace(v) + "%"
	}
	return wildcards(v, likeEscaper, "%")
}

// wildcards escapes each run of an IQL LIKE pattern between "*"s and joins the runs with
// the engine's any-run wildcard.
func wildcards(v string, esc *strings.Replacer, wild string) string {
	parts := strings.Split(v, "*")
	for i, p := range parts {
		parts[i] = esc.Replace(p)
	}
	return strings.Join(parts, wild)
}
