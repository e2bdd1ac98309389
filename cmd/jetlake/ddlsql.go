package main

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"github.com/jetlake/jetlake/config"
	"github.com/jetlake/jetlake/formats"
)

// sqlString quotes s as an SQL string literal.
func sqlString(s string) string {
	return "'" + strings.ReplaceAll(s, "'", "''") + "'"
}

// athenaReserved are the reserved keywords of Athena DDL (Hive); as column
// names they need backticks.
var athenaReserved = wordSet(`all alter and array as authorization between bigint binary boolean both by case cast char
column conf constraint commit create cross cube current current_date current_timestamp cursor database date
dayofweek decimal delete describe distinct double drop else end exchange exists extended external extract false
fetch float floor following for foreign from full function grant group grouping having if import in inner insert
int integer intersect interval into is join lateral left less like local macro map more none not null numeric of
on only or order out outer over partialscan partition percent preceding precision preserve primary procedure range
reads reduce regexp references revoke right rlike rollback rollup row rows select set smallint start table
tablesample then time timestamp to transform trigger true truncate unbounded union uniquejoin update user using
utc_timestamp values varchar views when where window with`)

// trinoReserved are Trino's reserved keywords, and type names that read
// better quoted; as column names they get double quotes.
var trinoReserved = wordSet(`alter and as between by case cast constraint create cross cube current_catalog current_date
current_path current_role current_schema current_time current_timestamp current_user deallocate delete describe
distinct drop else end escape except execute exists extract false for from full function group grouping having in
inner insert intersect into is join json_array json_exists json_object json_query json_table json_value left like
listagg localtime localtimestamp natural normalize not null on or order outer prepare recursive right rollup select
skip table then trim true uescape union unnest using values when where with date time timestamp`)

func wordSet(words string) map[string]bool {
	m := map[string]bool{}
	for _, w := range strings.Fields(words) {
		m[w] = true
	}
	return m
}

var plainIdent = regexp.MustCompile(`^[a-z][a-z0-9_]*$`)

func athenaIdent(name string) string {
	if plainIdent.MatchString(name) && !athenaReserved[name] {
		return name
	}
	return "`" + strings.ReplaceAll(name, "`", "``") + "`"
}

func trinoIdent(name string) string {
	if plainIdent.MatchString(name) && !trinoReserved[name] {
		return name
	}
	return `"` + strings.ReplaceAll(name, `"`, `""`) + `"`
}

func qualified(name string, ident func(string) string) string {
	parts := strings.Split(name, ".")
	for i, p := range parts {
		parts[i] = ident(p)
	}
	return strings.Join(parts, ".")
}

func athenaDDL(c *config.Connector, table, base string, cols []column, l *layout) string {
	var b strings.Builder
	fmt.Fprintf(&b, "CREATE EXTERNAL TABLE IF NOT EXISTS %s (\n", qualified(table, athenaIdent))
	for i, col := range cols {
		fmt.Fprintf(&b, "  %s %s%s\n", athenaIdent(col.name), col.athena, comma(i, len(cols)))
	}
	b.WriteString(")\n")
	if len(l.parts) > 0 {
		b.WriteString("PARTITIONED BY (\n")
		for i, p := range l.parts {
			fmt.Fprintf(&b, "  %s %s%s\n", athenaIdent(p.name), p.athena, comma(i, len(l.parts)))
		}
		b.WriteString(")\n")
	}
	if c.Output.Format == formats.Parquet {
		b.WriteString("STORED AS PARQUET\n")
	} else {
		b.WriteString("ROW FORMAT SERDE 'org.openx.data.jsonserde.JsonSerDe'\n")
		b.WriteString("STORED AS INPUTFORMAT 'org.apache.hadoop.mapred.TextInputFormat'\n")
		b.WriteString("OUTPUTFORMAT 'org.apache.hadoop.hive.ql.io.HiveIgnoreKeyTextOutputFormat'\n")
	}
	fmt.Fprintf(&b, "LOCATION %s", sqlString(base+l.fixed))
	if len(l.parts) == 0 {
		b.WriteString(";\n")
		return b.String()
	}
	var props [][2]string
	add := func(k, v string) { props = append(props, [2]string{k, v}) }
	add("projection.enabled", "true")
	for _, p := range l.parts {
		k := "projection." + p.name + "."
		add(k+"type", p.proj)
		switch p.proj {
		case projEnum:
			add(k+"values", strings.Join(p.values, ","))
		case projDate:
			add(k+"format", p.format)
			add(k+"range", p.since+",NOW")
			add(k+"interval", "1")
			add(k+"interval.unit", "DAYS")
		case projInteger:
			add(k+"range", fmt.Sprintf("%d,%d", p.lo, p.hi))
			add(k+"digits", strconv.Itoa(p.digits))
		}
	}
	add("storage.location.template", base+l.template)
	b.WriteString("\nTBLPROPERTIES (\n")
	for i, p := range props {
		fmt.Fprintf(&b, "  %s = %s%s\n", sqlString(p[0]), sqlString(p[1]), comma(i, len(props)))
	}
	b.WriteString(");\n")
	return b.String()
}

func trinoDDL(c *config.Connector, table, base string, cols []column, l *layout) string {
	var b strings.Builder
	fmt.Fprintf(&b, "CREATE TABLE IF NOT EXISTS %s (\n", qualified(table, trinoIdent))
	all := len(cols) + len(l.parts)
	for i, col := range cols {
		fmt.Fprintf(&b, "  %s %s%s\n", trinoIdent(col.name), col.trino, comma(i, all))
	}
	for i, p := range l.parts {
		var props []string
		switch p.proj {
		case projEnum:
			props = append(props, "partition_projection_type = 'ENUM'", "partition_projection_values = "+sqlArray(p.values))
		case projInjected:
			props = append(props, "partition_projection_type = 'INJECTED'")
		case projDate:
			props = append(props, "partition_projection_type = 'DATE'",
				"partition_projection_format = "+sqlString(p.format),
				"partition_projection_range = "+sqlArray([]string{p.since, "NOW"}),
				"partition_projection_interval = 1",
				"partition_projection_interval_unit = 'DAYS'")
		case projInteger:
			props = append(props, "partition_projection_type = 'INTEGER'",
				"partition_projection_range = "+sqlArray([]string{strconv.Itoa(p.lo), strconv.Itoa(p.hi)}),
				fmt.Sprintf("partition_projection_digits = %d", p.digits))
		}
		fmt.Fprintf(&b, "  %s %s WITH (%s)%s\n", trinoIdent(p.name), p.trino, strings.Join(props, ", "), comma(len(cols)+i, all))
	}
	b.WriteString(")\nWITH (\n")
	format := "OPENX_JSON"
	if c.Output.Format == formats.Parquet {
		format = "PARQUET"
	}
	props := []string{
		"format = " + sqlString(format),
		"external_location = " + sqlString(base+l.fixed),
	}
	if len(l.parts) > 0 {
		names := make([]string, len(l.parts))
		for i, p := range l.parts {
			names[i] = p.name
		}
		props = append(props,
			"partitioned_by = "+sqlArray(names),
			"partition_projection_enabled = true",
			"partition_projection_location_template = "+sqlString(base+l.template))
	}
	for i, p := range props {
		fmt.Fprintf(&b, "  %s%s\n", p, comma(i, len(props)))
	}
	b.WriteString(");\n")
	return b.String()
}

func sqlArray(values []string) string {
	q := make([]string, len(values))
	for i, v := range values {
		q[i] = sqlString(v)
	}
	return "ARRAY[" + strings.Join(q, ", ") + "]"
}

func comma(i, n int) string {
	if i < n-1 {
		return ","
	}
	return ""
}
