// Package config loads connector files: TOML files that each describe one
// connector, which exports the messages of one or more JetStream streams to
// S3.
//
// Load parses, validates and resolves the files in one step. The result has
// every default filled in, so the rest of jetlake never looks at raw TOML.
// Validation reports every problem it finds, across all files, each as
// "FILE:LINE: KEY: what is wrong and what is allowed", so that one run shows
// everything to fix.
//
// Secrets are never read from a connector file: it names the files or the
// environment variables that hold them.
package config

import (
	"cmp"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// ErrNoConnectors is returned, wrapped, when Load is given a directory that
// holds no connector files.
var ErrNoConnectors = errors.New("no *.toml connector files")

// Problem is one thing wrong in a connector file.
type Problem struct {
	File string // the path of the file, as given to Load or joined to its directory
	Line int    // 1-based line of the offending key, of its table when the key is missing, or 1
	Key  string // dotted key such as "rotation.max_file_size" or "streams[2].ack_wait"; "toml" for a syntax error
	Msg  string // what is wrong and what is allowed
}

// Error formats the problem as "FILE:LINE: KEY: MSG".
func (p *Problem) Error() string {
	return fmt.Sprintf("%s:%d: %s: %s", p.File, p.Line, p.Key, p.Msg)
}

// Errors lists every problem Load found. It is never empty when returned as
// an error.
type Errors []*Problem

// Error returns one problem per line.
func (e Errors) Error() string {
	lines := make([]string, len(e))
	for i, p := range e {
		lines[i] = p.Error()
	}
	return strings.Join(lines, "\n")
}

// Unwrap returns the problems, so that errors.As finds a *Problem.
func (e Errors) Unwrap() []error {
	errs := make([]error, len(e))
	for i, p := range e {
		errs[i] = p
	}
	return errs
}

// Load reads the connector file at path, or every connector file in the
// directory at path: the files whose names end in ".toml" and do not start
// with ".", in name order, without descending into subdirectories.
//
// It returns every connector, enabled or not; the caller filters on Enabled.
// When any file has a problem, Load returns no connectors and an Errors value
// that lists every problem of every file, including connector names used by
// more than one file, and enabled connectors that would write into one
// Iceberg table's folder: two writing one table, or one whose objects lie
// in another's table. A directory without connector files gives an error
// wrapping ErrNoConnectors; a path or file that can not be read gives the
// *fs.PathError, wrapped.
func Load(path string) ([]*Connector, error) {
	info, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("config: %w", err)
	}
	files := []string{path}
	if info.IsDir() {
		files, err = connectorFiles(path)
		if err != nil {
			return nil, err
		}
	}

	type seen struct {
		file string
		line int
	}
	names := make(map[string]seen)
	var (
		conns  []*Connector
		all    Errors
		placed []placedConnector
	)
	for _, file := range files {
		src, err := os.ReadFile(file)
		if err != nil {
			return nil, fmt.Errorf("config: %w", err)
		}
		conn, lines, probs := parse(file, src)
		nameLine := 0
		if lines != nil {
			nameLine = lines.line(keyPath{}.key("name"))
		}
		if conn != nil && conn.Name != "" {
			if first, ok := names[conn.Name]; ok {
				probs = append(probs, &Problem{
					File: file, Line: nameLine, Key: "name",
					Msg: fmt.Sprintf("connector name %q is also used by %s:%d; every connector needs its own name", conn.Name, first.file, first.line),
				})
				sortProblems(probs)
			} else {
				names[conn.Name] = seen{file, nameLine}
			}
		}
		if len(probs) == 0 && conn.Enabled {
			placed = append(placed, placedConnector{conn, lines})
		}
		all = append(all, probs...)
		conns = append(conns, conn)
	}
	all = append(all, overlaps(placed)...)
	all = append(all, nested(placed)...)
	if len(all) > 0 {
		return nil, all
	}
	return conns, nil
}

// Parse parses, validates and resolves one connector file held in memory.
// file names it in problems. The error, if any, is an Errors value.
func Parse(file string, src []byte) (*Connector, error) {
	conn, _, probs := parse(file, src)
	if len(probs) > 0 {
		return nil, probs
	}
	return conn, nil
}

// connectorFiles lists the connector files of dir, sorted by name.
func connectorFiles(dir string) ([]string, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("config: %w", err)
	}
	var files []string
	for _, e := range entries {
		name := e.Name()
		if !strings.HasSuffix(name, ".toml") || strings.HasPrefix(name, ".") {
			continue
		}
		file := filepath.Join(dir, name)
		// Stat follows symbolic links, so a link to a file counts.
		info, err := os.Stat(file)
		if err != nil {
			return nil, fmt.Errorf("config: %w", err)
		}
		if info.Mode().IsRegular() {
			files = append(files, file)
		}
	}
	if len(files) == 0 {
		return nil, fmt.Errorf("config: %s: %w", dir, ErrNoConnectors)
	}
	return files, nil
}

// sortProblems orders the problems of one file by line, keeping the order in
// which they were found within a line.
func sortProblems(probs Errors) {
	slices.SortStableFunc(probs, func(a, b *Problem) int { return cmp.Compare(a.Line, b.Line) })
}
