"""The etnaviv family (VeriSilicon Vivante NPUs: Amlogic A311D v7, NXP i.MX8M Plus v8)."""
