package main

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"
)

func TestJSONLogsWriteDurationsAsGoDurations(t *testing.T) {
	for _, format := range []string{"json", "text"} {
		var out bytes.Buffer
		log, err := newLogger(format, "info", &out)
		if err != nil {
			t.Fatal(err)
		}
		log.Info("object uploaded", "upload_duration", 1500*time.Millisecond)
		if !strings.Contains(out.String(), "1.5s") {
			t.Errorf("%s log %q: want the duration as 1.5s", format, out.String())
		}
		if format != "json" {
			continue
		}
		var rec map[string]any
		if err := json.Unmarshal(out.Bytes(), &rec); err != nil {
			t.Fatalf("json log %q: %v", out.String(), err)
		}
		if got := rec["upload_duration"]; got != "1.5s" {
			t.Errorf("json log upload_duration = %#v, want \"1.5s\"", got)
		}
	}
}
