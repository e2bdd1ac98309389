package plan

import (
	"context"
	"testing"
	"time"

	"github.com/jetlake/jetlake/config"
)

// restoreConnector is a connector with the [output] keys output and, when
// iceberg, an [iceberg] table.
func restoreConnector(t *testing.T, output string, iceberg bool) *config.Connector {
	t.Helper()
	src := `name = "lake"
enabled = false

[nats]
url = "nats://127.0.0.1:4222"

[[streams]]
stream = "EVENTS"

[s3]
bucket = "lake"

[output]
` + output
	if iceberg {
		src += `
[iceberg]
uri = "sqlite:///var/lib/jetlake/catalog.db"
table = "events"
`
	}
	c, err := config.Parse("restore.toml", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestRestoreCheckSaysWhichRestoreTheOutputAllows(t *testing.T) {
	tests := []struct {
		name    string
		output  string
		iceberg bool
		want    Check
	}{
		{"json_lines with headers and exact payloads", "include_headers = true\nkeep_exact_payload = true\n", false,
			Check{OK, "restore: messages come back with subjects, headers and payloads byte for byte"}},
		{"the defaults", "", false,
			Check{Note, "restore: messages come back with subjects; JSON payloads come back compacted (keep_exact_payload = true keeps their bytes), other payloads byte for byte; headers are not kept (include_headers = false)"}},
		{"json_array with exact payloads, without headers", "format = \"json_array\"\nkeep_exact_payload = true\n", false,
			Check{Note, "restore: messages come back with subjects and payloads byte for byte; headers are not kept (include_headers = false)"}},
		{"without metadata", "include_metadata = false\ninclude_headers = true\n", false,
			Check{Note, "restore: not possible: the records are payloads without subjects or sequences (include_metadata = false)"}},
		{"raw", "format = \"raw\"\n", false,
			Check{Note, "restore: not possible: raw objects hold payloads without subjects or sequences"}},
		{"parquet with headers", "format = \"parquet\"\ninclude_headers = true\n", false,
			Check{Note, "restore: messages come back with subjects and headers; JSON payloads come back compacted (as the parquet payload column holds them), other payloads byte for byte"}},
		{"parquet without payloads", "format = \"parquet\"\nkeep_payload = false\n", false,
			Check{Note, "restore: not possible: the parquet files hold no payloads (keep_payload = false)"}},
		{"an Iceberg table", "format = \"parquet\"\ninclude_headers = true\n", true,
			Check{Note, "restore from the Iceberg table's parquet data files: messages come back with subjects and headers; JSON payloads come back compacted (as the parquet payload column holds them), other payloads byte for byte"}},
		{"an Iceberg table without payloads", "format = \"parquet\"\nkeep_payload = false\n", true,
			Check{Note, "restore from the Iceberg table's parquet data files: not possible: the parquet files hold no payloads (keep_payload = false)"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := restoreConnector(t, tt.output, tt.iceberg)
			if got := RestoreCheck(c); got != tt.want {
				t.Errorf("RestoreCheck =\n%+v, want\n%+v", got, tt.want)
			}
			// A disabled connector's plan, which is offline, says it too.
			r := Run(context.Background(), c, Options{Timeout: time.Second})
			if last := r.Checks[len(r.Checks)-1]; last != tt.want {
				t.Errorf("the plan's last check is %+v, want %+v", last, tt.want)
			}
		})
	}
}
