/* cmd_train.c — placeholder replaced by the train module's command. */
#include <stdio.h>
#include "cmd.h"
int sc_cmd_train(int argc, char **argv)
{
        fprintf(stderr, "scadles train: not built yet\n");
        return 1;
}
