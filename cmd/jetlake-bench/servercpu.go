package main

import (
	"bytes"
	"os"
	"strconv"
	"time"
)

// serverCPU is the CPU time (user+sys) nats-server and MinIO have used
// since they started; ok is false where it cannot be read (outside Linux).
type serverCPU struct {
	nats, minio time.Duration
	ok          bool
}

// serverCPU reads what the bench's servers have used so far.
func (b *bench) serverCPU() serverCPU {
	n, nok := procCPU(b.ns.PID())
	m, mok := procCPU(b.ms.PID())
	return serverCPU{nats: n, minio: m, ok: nok && mok}
}

// since sets the servers' CPU seconds from start to now on *nats and *minio;
// it leaves them zero when either reading failed.
func (b *bench) since(start serverCPU, nats, minio *float64) {
	end := b.serverCPU()
	if !start.ok || !end.ok {
		return
	}
	*nats = (end.nats - start.nats).Seconds()
	*minio = (end.minio - start.minio).Seconds()
}

// clockTicks is USER_HZ, the unit of the times in /proc/<pid>/stat: 100 on
// every Linux architecture Go runs on.
const clockTicks = 100

// procCPU returns the user and system time of process pid, from
// /proc/<pid>/stat; false when there is no such file or it cannot be
// parsed.
func procCPU(pid int) (time.Duration, bool) {
	if pid <= 0 {
		return 0, false
	}
	stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, false
	}
	return parseProcStat(stat)
}

// parseProcStat returns utime+stime from the contents of a /proc/<pid>/stat
// file. The command name, in parentheses, may hold spaces and parentheses
// itself, so the fields are counted from the last ')': the state is field 3,
// utime field 14 and stime field 15.
func parseProcStat(stat []byte) (time.Duration, bool) {
	i := bytes.LastIndexByte(stat, ')')
	if i < 0 {
		return 0, false
	}
	fields := bytes.Fields(stat[i+1:])
	if len(fields) < 13 {
		return 0, false
	}
	utime, err1 := strconv.ParseUint(string(fields[11]), 10, 64)
	stime, err2 := strconv.ParseUint(string(fields[12]), 10, 64)
	if err1 != nil || err2 != nil {
		return 0, false
	}
	return time.Duration(utime+stime) * time.Second / clockTicks, true
}
