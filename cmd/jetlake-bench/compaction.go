package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"sync"
	"syscall"
	"time"

	"github.com/minio/minio-go/v7"

	"github.com/jetlake/jetlake/config"
	"github.com/jetlake/jetlake/pathtemplate"
)

// CompactionResult measures jetlake compact: an Iceberg table of many small
// data files, merged into one file per partition, against the time MinIO
// takes to read those bytes and write them once, measured in the same run.
type CompactionResult struct {
	Messages   int   `json:"messages"`
	Subjects   int   `json:"subjects"`
	SmallFiles int   `json:"small_files"`
	Partitions int   `json:"partitions"`
	Bytes      int64 `json:"bytes"` // of the small files
	FilesAfter int   `json:"files_after"`

	Seconds     float64 `json:"seconds"` // wall time of jetlake compact
	CPUSeconds  float64 `json:"cpu_seconds"`
	MBPerSecond float64 `json:"mb_per_second"` // small files' bytes / wall time

	// The limit reads every small file and writes each partition's bytes
	// as one object, with the upload concurrency.
	LimitSeconds     float64 `json:"limit_seconds"`
	LimitMBPerSecond float64 `json:"limit_mb_per_second"`
	Ratio            float64 `json:"limit_ratio"` // limit time / jetlake compact's

	Error string `json:"error,omitempty"`
}

// compactionSpec is the table the compaction measurement makes: messages
// over subjects (one hour partition each), perFile messages per data file.
type compactionSpec struct {
	Messages, Subjects, PerFile int
}

// compaction measures jetlake compact over a table jetlake run fills with
// small files.
func (b *bench) compaction(ctx context.Context, spec compactionSpec) *CompactionResult {
	r := &CompactionResult{Messages: spec.Messages, Subjects: spec.Subjects}
	if b.skip("compaction", &r.Error) {
		return r
	}
	w := &WorkloadResult{Name: "compact", Messages: spec.Messages, Subjects: spec.Subjects, Stream: "BENCH_COMPACT"}
	defer b.deleteStream(ctx, w.Stream)
	if err := b.prefill(ctx, workloadSpec{Name: w.Name, Messages: spec.Messages, Subjects: spec.Subjects}, w); err != nil {
		r.Error = b.failure("compaction pre-fill", ctx, err)
		return r
	}
	file := filepath.Join(b.logDir, "compaction.toml")
	prefix := "compaction"
	catalog := filepath.Join(b.logDir, "compaction-catalog.db")
	if err := removeCatalog(catalog); err != nil {
		r.Error = err.Error()
		return r
	}
	if err := os.WriteFile(file, b.compactionConnector(w, spec, prefix, catalog), 0o644); err != nil {
		r.Error = err.Error()
		return r
	}
	b.progress("compaction: jetlake run writes %s messages in files of %d", fmtInt(int64(spec.Messages)), spec.PerFile)
	if _, err := b.runJetlake(ctx, file, filepath.Join(b.logDir, "compaction-run.log")); err != nil {
		r.Error = b.failure("compaction run", ctx, err)
		return r
	}
	// The partitions close a second after their newest row.
	time.Sleep(1500 * time.Millisecond)
	dataPrefix := prefix + "/bench/compact/data/"
	small, err := b.objects(ctx, dataPrefix)
	if err != nil {
		r.Error = err.Error()
		return r
	}
	parts := map[string][]string{}
	for key, size := range small {
		parts[path.Dir(key)] = append(parts[path.Dir(key)], key)
		r.Bytes += size
	}
	r.SmallFiles, r.Partitions = len(small), len(parts)

	b.progress("compaction: limit: reading %d files (%s) and writing %d objects", r.SmallFiles, fmtMB(r.Bytes), r.Partitions)
	start := time.Now()
	if err := b.readWriteLimit(ctx, parts, "compaction-limit"); err != nil {
		r.Error = err.Error()
		return r
	}
	r.LimitSeconds = time.Since(start).Seconds()
	r.LimitMBPerSecond = float64(r.Bytes) / 1e6 / r.LimitSeconds

	b.progress("compaction: jetlake compact")
	res, err := b.runChild(ctx, filepath.Join(b.logDir, "compaction.log"), "compact", "-config", file)
	if res != nil {
		r.Seconds, r.CPUSeconds = res.wall.Seconds(), res.cpu.Seconds()
	}
	if err != nil {
		r.Error = b.failure("jetlake compact", ctx, err)
		return r
	}
	r.MBPerSecond = float64(r.Bytes) / 1e6 / r.Seconds
	r.Ratio = r.LimitSeconds / r.Seconds
	after, err := b.objects(ctx, dataPrefix)
	if err != nil {
		r.Error = err.Error()
		return r
	}
	for key := range after {
		if n, ok := pathtemplate.ParseName(path.Base(key)); ok && n.Compaction != "" {
			r.FilesAfter++
		}
	}
	if r.FilesAfter != r.Partitions {
		r.Error = fmt.Sprintf("%d compacted files for %d partitions", r.FilesAfter, r.Partitions)
	}
	b.progress("compaction: %d files (%s) in %s (%.1f MB/s), limit %s (%.1f MB/s): ratio %s",
		r.SmallFiles, fmtMB(r.Bytes), fmtSeconds(r.Seconds), r.MBPerSecond, fmtSeconds(r.LimitSeconds), r.LimitMBPerSecond, fmtRatio(r.Ratio))
	return r
}

// compactionConnector returns the connector file of the compaction
// measurement: an Iceberg table in an embedded catalog, the sqlite file
// catalog.
func (b *bench) compactionConnector(w *WorkloadResult, spec compactionSpec, prefix, catalog string) []byte {
	var c bytes.Buffer
	fmt.Fprintf(&c, "name = \"bench-compaction\"\nshutdown_timeout = \"30s\"\n\n")
	fmt.Fprintf(&c, "[nats]\nurl = %q\n\n", b.ns.URL)
	fmt.Fprintf(&c, "[[streams]]\nstream = %q\nconsumer = \"bench-compaction\"\nack_wait = %q\n\n", w.Stream, b.ackWait().String())
	fmt.Fprintf(&c, "[s3]\nbucket = %q\nendpoint = %q\nprefix = %q\nupload_concurrency = %d\n\n",
		bucket, b.ms.Endpoint, prefix, b.cfg.UploadConcurrency)
	c.WriteString("[output]\nformat = \"parquet\"\n\n")
	fmt.Fprintf(&c, "[iceberg]\nuri = %q\nnamespace = \"bench\"\ntable = \"compact\"\ncommit_interval = \"1h\"\ncompact_after = \"1s\"\n\n",
		"sqlite://"+catalog)
	fmt.Fprintf(&c, "[rotation]\nmax_file_size = %q\nmax_messages_per_file = %d\nmax_file_age = \"1s\"\nmax_buffered_bytes = %q\n",
		config.FormatSize(b.cfg.MaxFileSize), spec.PerFile, config.FormatSize(b.cfg.MaxBufferedBytes))
	return c.Bytes()
}

// objects returns the keys under prefix with their sizes.
func (b *bench) objects(ctx context.Context, prefix string) (map[string]int64, error) {
	out := map[string]int64{}
	for o := range b.s3.ListObjects(ctx, bucket, minio.ListObjectsOptions{Prefix: prefix, Recursive: true}) {
		if o.Err != nil {
			return nil, fmt.Errorf("list %s: %w", prefix, o.Err)
		}
		out[o.Key] = o.Size
	}
	return out, nil
}

// readWriteLimit reads every object of every group and writes each group's
// bytes as one object under prefix, upload-concurrency at a time.
func (b *bench) readWriteLimit(ctx context.Context, groups map[string][]string, prefix string) error {
	work := make(chan []string)
	errs := make(chan error, b.cfg.UploadConcurrency)
	var wg sync.WaitGroup
	for range b.cfg.UploadConcurrency {
		wg.Go(func() {
			for keys := range work {
				var body bytes.Buffer
				for _, key := range keys {
					o, err := b.s3.GetObject(ctx, bucket, key, minio.GetObjectOptions{})
					if err == nil {
						_, err = io.Copy(&body, o)
						o.Close()
					}
					if err != nil {
						errs <- fmt.Errorf("get %s: %w", key, err)
						return
					}
				}
				key := prefix + "/" + path.Base(path.Dir(keys[0])) + "-" + fmt.Sprint(len(keys)) + ".bin"
				if _, err := b.s3.PutObject(ctx, bucket, key, bytes.NewReader(body.Bytes()), int64(body.Len()),
					minio.PutObjectOptions{DisableMultipart: true, SendContentMd5: true, DisableContentSha256: true}); err != nil {
					errs <- fmt.Errorf("put %s: %w", key, err)
					return
				}
			}
		})
	}
	for _, keys := range groups {
		select {
		case work <- keys:
		case err := <-errs:
			close(work)
			wg.Wait()
			return err
		}
	}
	close(work)
	wg.Wait()
	select {
	case err := <-errs:
		return err
	default:
		return nil
	}
}

// runChild runs the jetlake binary with args, its output to logFile, and
// measures it.
func (b *bench) runChild(ctx context.Context, logFile string, args ...string) (*childResult, error) {
	log, err := os.Create(logFile)
	if err != nil {
		return nil, err
	}
	defer log.Close()
	cmd := execCommand(ctx, b.jetlake, args...)
	cmd.Env = b.ms.ClientEnv()
	cmd.Stdout, cmd.Stderr = log, log
	start := time.Now()
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start jetlake: %w", err)
	}
	// Start returns after the exec: the address space polled is jetlake's.
	done := make(chan struct{})
	peak := watchPeakRSS(cmd.Process.Pid, done)
	err = cmd.Wait()
	close(done)
	res := &childResult{wall: time.Since(start), maxRSS: <-peak}
	if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
		res.user = time.Duration(ru.Utime.Nano())
		res.cpu = res.user + time.Duration(ru.Stime.Nano())
		if res.maxRSS == 0 {
			// No /proc: the kernel's figure, which may count the bench's.
			res.maxRSS = ru.Maxrss * 1024
		}
	}
	if err != nil {
		return res, fmt.Errorf("jetlake %s: %w (log %s)", args[0], err, logFile)
	}
	return res, nil
}

// execCommand is exec.CommandContext for the jetlake binary: in its own
// process group, killed when the bench dies, sent SIGTERM when ctx ends and
// killed stopGrace later.
func execCommand(ctx context.Context, bin string, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	cmd.Cancel = func() error { return cmd.Process.Signal(syscall.SIGTERM) }
	cmd.WaitDelay = stopGrace
	return cmd
}
