package main

import (
	"bufio"
	"encoding/json"
	"os"
	"strings"
)

// logSummary is what a run's JSON log says.
type logSummary struct {
	reasons      map[string]int // uploaded objects by rotation reason
	warnings     int            // WARN lines
	firstWarning string
	lastError    string // the last ERROR line
	slowConsumer int    // "nats: slow consumer, messages dropped" lines
	commits      int    // Iceberg commits
	// committedFiles sums the data files of the Iceberg commits.
	committedFiles int
	rejected       int // messages the "messages rejected" lines count
}

func parseLog(file string) logSummary {
	s := logSummary{reasons: map[string]int{}}
	f, err := os.Open(file)
	if err != nil {
		return s
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 4<<20)
	for sc.Scan() {
		var line struct {
			Level  string `json:"level"`
			Msg    string `json:"msg"`
			Reason string `json:"reason"`
			Error  string `json:"error"`
			Files  int    `json:"files"`
			// Messages is a "messages rejected" line's count.
			Messages int `json:"messages"`
		}
		if json.Unmarshal(sc.Bytes(), &line) != nil {
			// Not a log record: the NATS client's default error handler,
			// or what the command printed on the way out.
			if strings.Contains(sc.Text(), "slow consumer") {
				s.slowConsumer++
				continue
			}
			if t := strings.TrimSpace(sc.Text()); t != "" {
				s.lastError = t
			}
			continue
		}
		text := line.Msg
		if line.Error != "" {
			text += ": " + line.Error
		}
		switch {
		case line.Msg == "object uploaded":
			s.reasons[line.Reason]++
		case line.Msg == "messages rejected":
			s.rejected += line.Messages
		case line.Msg == "iceberg commit":
			s.commits++
			s.committedFiles += line.Files
		case line.Level == "WARN":
			if s.warnings == 0 {
				s.firstWarning = text
			}
			s.warnings++
		case line.Level == "ERROR":
			s.lastError = text
		}
	}
	return s
}
