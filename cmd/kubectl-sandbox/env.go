package main

import (
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"

	"github.com/spf13/cobra"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/cli-runtime/pkg/genericiooptions"

	sandboxv1 "github.com/roboco-sandbox/sandbox-controller/api/v1alpha1"
)

// newEnv is `env NAME`: the Sandbox's Secret as shell exports or a .env file.
func newEnv(c clients, streams genericiooptions.IOStreams) *cobra.Command {
	format := "shell"
	cmd := &cobra.Command{
		Use:   "env NAME",
		Short: "Print a Sandbox's connection variables: eval \"$(kubectl sandbox env NAME)\", or --format dotenv > .env",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if format != "shell" && format != "dotenv" {
				return fmt.Errorf("--format must be shell or dotenv, not %q", format)
			}
			ns, err := c.namespace()
			if err != nil {
				return err
			}
			core, err := c.core()
			if err != nil {
				return err
			}
			sb := &sandboxv1.Sandbox{ObjectMeta: metav1.ObjectMeta{Name: args[0]}}
			secret, err := core.CoreV1().Secrets(ns).Get(cmd.Context(), sandboxv1.SecretName(sb), metav1.GetOptions{})
			if err != nil {
				return fmt.Errorf("the Sandbox's Secret: %w", err)
			}
			var b strings.Builder
			for _, k := range slices.Sorted(maps.Keys(secret.Data)) {
				v := string(secret.Data[k])
				if format == "shell" {
					b.WriteString("export " + k + "=" + shellQuote(v) + "\n")
				} else {
					b.WriteString(k + "=" + dotenvQuote(v) + "\n")
				}
			}
			_, err = io.WriteString(streams.Out, b.String())
			return err
		},
	}
	cmd.Flags().StringVar(&format, "format", format, "shell (export lines) or dotenv (KEY=value lines)")
	return cmd
}

// shellQuote quotes v for a POSIX shell: single quotes, with ' as '\”.
func shellQuote(v string) string {
	return "'" + strings.ReplaceAll(v, "'", `'\''`) + "'"
}

// dotenvQuote leaves plain values bare and double-quotes the rest.
func dotenvQuote(v string) string {
	if v != "" && !strings.ContainsAny(v, " \t\"'\\$#=\n`") {
		return v
	}
	r := strings.NewReplacer(`\`, `\\`, `"`, `\"`, "$", `\$`, "\n", `\n`, "`", "\\`")
	return `"` + r.Replace(v) + `"`
}
