/* cmd_config.c — placeholder replaced by the config module's command. */
#include <stdio.h>
#include "cmd.h"
int sc_cmd_config(int argc, char **argv)
{
        fprintf(stderr, "scadles config: not built yet\n");
        return 1;
}
