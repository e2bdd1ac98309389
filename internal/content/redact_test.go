package content

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/jetlake/jetlake/config"
	"github.com/jetlake/jetlake/pathtemplate"
)

func TestRedactedQuotesNothingOfTheMessage(t *testing.T) {
	const secret = "ada.lovelace@example.com"
	header := config.EventTime{Header: "Event-Time", Reject: true}
	tests := []struct {
		name    string
		et      config.EventTime
		data    string
		headers map[string][]string
		want    string
	}{
		{"type error", config.EventTime{}, `{"created_at":"` + secret + `"}`, nil,
			"column created_at (source created_at): a string that is not an RFC 3339 timestamp is not a timestamp"},
		{"event time header", header, `{}`, map[string][]string{"Event-Time": {secret}},
			"no event time: time_source header:Event-Time"},
		{"event time column", config.EventTime{Column: "created_at", Reject: true}, `{"tenant":"` + secret + `"}`, nil,
			"no event time: time_source column:created_at"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out := contentOutput(t, tt.et)
			if tt.et.Header != "" {
				out.Time.Unit = "ms"
			}
			c, err := New(out, false)
			if err != nil {
				t.Fatal(err)
			}
			var v pathtemplate.Values
			_, err = c.Read([]byte(tt.data), tt.headers, time.Now(), &v)
			if err == nil {
				t.Fatal("not rejected")
			}
			got := Redacted(err)
			if strings.Contains(got, secret[:8]) {
				t.Errorf("Redacted = %q: it quotes the message", got)
			}
			if !strings.HasPrefix(got, tt.want) {
				t.Errorf("Redacted = %q, want %q", got, tt.want)
			}
		})
	}
	if got := Redacted(errors.New(secret)); strings.Contains(got, secret) {
		t.Errorf("Redacted of another error = %q", got)
	}
}
