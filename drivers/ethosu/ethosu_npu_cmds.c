/* The generated U65 command table, exported for tests (ethosu_npu_cmds.h). */
#include "ethosu_npu_cmds.h"

const struct ethosu_cmd_desc *const ethosu_npu_cmd_table = ethosu_u65_cmds;
const unsigned ethosu_npu_cmd_count = ETHOSU_U65_NUM_CMDS;
