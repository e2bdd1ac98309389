package config_test

import (
	"errors"
	"fmt"

	"github.com/jetlake/jetlake/config"
)

func ExampleLoad() {
	conns, err := config.Load("testdata/age.bad.toml")
	var probs config.Errors
	if errors.As(err, &probs) {
		for _, p := range probs {
			fmt.Printf("line %d, %s\n", p.Line, p.Key)
		}
	}
	fmt.Println(len(conns), "connectors")

	conns, err = config.Load("testdata/minimal.good.toml")
	if err != nil {
		panic(err)
	}
	c := conns[0]
	fmt.Println(c.Name, c.Streams[0].Consumer, c.Streams[0].MaxAckPending, config.FormatSize(c.Rotation.MaxFileSize), c.Output.PathTemplate)
	// Output:
	// line 17, rotation.max_file_age
	// 0 connectors
	// events events 250000 8MiB {stream}/{subject}/{date}/{hour}
}
