package config

import (
	"fmt"
	"strconv"
	"strings"
)

// MaxPartitions is the most partitions a stream may be split into.
const MaxPartitions = 1024

// PartitionTransform is the subject transform of a stream split into p
// partitions: every subject the stream takes in is stored with a first
// token that names its partition, the FNV-1a hash of the whole subject
// modulo p ("orders.eu.42" is stored as "5.orders.eu.42"). One subject
// always lands in one partition, so the messages of a subject stay in
// order.
func PartitionTransform(p int) (source, destination string) {
	return "", fmt.Sprintf("{{partition(%d)}}.>", p)
}

// TransformPartitions returns the partition count p of a subject transform
// that is PartitionTransform(p) for a partitioned entry (p of 2 or more),
// and false for any other transform.
func TransformPartitions(source, destination string) (int, bool) {
	rest, ok := strings.CutPrefix(destination, "{{partition(")
	if !ok {
		return 0, false
	}
	n, ok := strings.CutSuffix(rest, ")}}.>")
	if !ok {
		return 0, false
	}
	p, err := strconv.Atoi(n)
	if err != nil || p < 2 || p > MaxPartitions {
		return 0, false
	}
	if src, dst := PartitionTransform(p); src != source || dst != destination {
		return 0, false
	}
	return p, true
}

// PartitionConsumer is the durable name of partition k's consumer.
func PartitionConsumer(consumer string, k int) string {
	return consumer + "-" + strconv.Itoa(k)
}

// PartitionFilters are the filter subjects of partition k's consumer: the
// entry's filters (the whole stream when it has none) behind the partition
// token. Partition 0 also reads what the stream stored before it was
// partitioned, under the subjects it was published on.
func PartitionFilters(k int, subjects, streamSubjects []string) []string {
	if len(subjects) == 0 {
		subjects = []string{">"}
	}
	out := make([]string, 0, 2*len(subjects))
	prefix := strconv.Itoa(k) + "."
	for _, s := range subjects {
		out = append(out, prefix+s)
	}
	if k == 0 {
		before := subjects
		if len(before) == 1 && before[0] == ">" {
			before = streamSubjects
		}
		out = append(out, before...)
	}
	return out
}

// StripPartition returns the subject a message was published on: its
// stored subject without the partition token. A subject stored before the
// stream was partitioned has none and is returned as it is.
func StripPartition(subject string) string {
	i := strings.IndexByte(subject, '.')
	if i <= 0 {
		return subject
	}
	for _, c := range subject[:i] {
		if c < '0' || c > '9' {
			return subject
		}
	}
	return subject[i+1:]
}

// CheckPartitionSubjects says why a stream with these subjects can not be
// partitioned, or returns "": a subject the stream takes in must not start
// with a number or a wildcard, or it could not be told apart from a
// partition token.
func CheckPartitionSubjects(streamSubjects []string) string {
	for _, s := range streamSubjects {
		first, _, _ := strings.Cut(s, ".")
		if first == "*" || first == ">" {
			return fmt.Sprintf("its subject %q starts with a wildcard, which a partition token would match too", s)
		}
		if StripPartition(s+".x") != s+".x" {
			return fmt.Sprintf("its subject %q starts with a number, which reads as a partition token", s)
		}
	}
	if len(streamSubjects) == 0 {
		return "it has no subjects of its own (a mirror or a stream of sources)"
	}
	return ""
}
