package config

import (
	"strings"
	"testing"
)

func TestSubjectMatches(t *testing.T) {
	tests := []struct {
		filter, subject string
		want            bool
	}{
		{"a.b", "a.b", true},
		{"a.*", "a.b", true},
		{"a.*", "a.b.c", false},
		{"a.>", "a.b.c", true},
		{"a.>", "a", false},
		{">", "a", true},
		{"a.b", "a", false},
		{"a", "a.b", false},
		{"*.b", "a.b", true},
		{"*.b", "a.c", false},
	}
	for _, tt := range tests {
		if got := SubjectMatches(tt.filter, tt.subject); got != tt.want {
			t.Errorf("SubjectMatches(%q, %q) = %v, want %v", tt.filter, tt.subject, got, tt.want)
		}
	}
}

func TestSubjectWithin(t *testing.T) {
	tests := []struct {
		inner, outer string
		want         bool
	}{
		{"a.b", "a.b", true},
		{"a.b", "a.*", true},
		{"a.b", "a.>", true},
		{"a.*", "a.>", true},
		{"a.*", "a.*", true},
		{"a.>", "a.>", true},
		{"a.>", ">", true},
		{"a.b.>", "a.>", true},
		{"a.*", "a.b", false},
		{"a.>", "a.*", false},
		{"a.>", "a.b.>", false},
		{"a", "a.>", false},
		{"a.b.c", "a.*", false},
		{"a.b", "a.b.c", false},
		{"*.b", "a.*", false},
		{"a.*.c", "a.>", true},
		{"b.c", "a.>", false},
	}
	for _, tt := range tests {
		if got := SubjectWithin(tt.inner, tt.outer); got != tt.want {
			t.Errorf("SubjectWithin(%q, %q) = %v, want %v", tt.inner, tt.outer, got, tt.want)
		}
	}
}

func TestSubjectsOverlap(t *testing.T) {
	tests := []struct {
		a, b string
		want bool
	}{
		{"a.b", "a.b", true},
		{"a.b", "a.c", false},
		{"a.>", "a.b.c", true},
		{"a.>", "a", false},
		{"a.*", "a.b", true},
		{"a.*", "a.c", true},
		{"a.*", "a.b.c", false},
		{"*.b", "a.*", true},
		{">", "x", true},
		{">", "x.y", true},
		{"a.b", "a.b.c", false},
	}
	for _, tt := range tests {
		if got := SubjectsOverlap(tt.a, tt.b); got != tt.want {
			t.Errorf("SubjectsOverlap(%q, %q) = %v, want %v", tt.a, tt.b, got, tt.want)
		}
		if got := SubjectsOverlap(tt.b, tt.a); got != tt.want {
			t.Errorf("SubjectsOverlap(%q, %q) = %v, want %v", tt.b, tt.a, got, tt.want)
		}
	}
}

func TestFiltersCover(t *testing.T) {
	tests := []struct {
		name           string
		filters        []string
		streamSubjects []string
		want           bool
	}{
		{"no filters: the whole stream", nil, []string{"a.>"}, true},
		{"'>' is the whole stream", []string{"x.y", ">"}, []string{"a.>"}, true},
		{"the stream's own subjects", []string{"b.*", "a.>"}, []string{"a.>", "b.*"}, true},
		{"wider than the stream's subjects", []string{"a.*"}, []string{"a.b", "a.c"}, true},
		{"one stream subject left out", []string{"a.>"}, []string{"a.>", "b.*"}, false},
		{"narrower than the stream's subjects", []string{"a.b"}, []string{"a.*"}, false},
		{"a filter on a stream without subjects", []string{"a.>"}, nil, false},
		{"no filters on a stream without subjects", nil, nil, true},
	}
	for _, tt := range tests {
		if got := FiltersCover(tt.filters, tt.streamSubjects); got != tt.want {
			t.Errorf("%s: FiltersCover(%q, %q) = %v, want %v", tt.name, tt.filters, tt.streamSubjects, got, tt.want)
		}
	}
}

func TestExampleSubject(t *testing.T) {
	for _, filter := range []string{"a.b", "a.*", "a.>", "*.b.>", ">"} {
		got := ExampleSubject(filter)
		if strings.ContainsAny(got, "*>") || !SubjectMatches(filter, got) {
			t.Errorf("ExampleSubject(%q) = %q: not a concrete subject the filter matches", filter, got)
		}
	}
	if got := ExampleSubject("a.*.c.>"); got != "a.example.c.example" {
		t.Errorf("ExampleSubject(%q) = %q, want %q", "a.*.c.>", got, "a.example.c.example")
	}
}
