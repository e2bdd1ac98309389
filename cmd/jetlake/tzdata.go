package main

// The time zone database is built in, so that [output] timezone works in
// images without /usr/share/zoneinfo.
import _ "time/tzdata"
